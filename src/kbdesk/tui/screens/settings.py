"""Settings: providers (with a connection test) and the model roles (seed 000 §0 picker).

Changes are written to config.toml (atomically, mode 0600) and then reloaded into the
desk, so new KBs, searches and re-embeds use them at once.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import Button, DataTable, Header, Label, Select, Static, TabbedContent, TabPane

from kbdesk.providers import ModelInfo
from kbdesk.textsafe import inert_line
from kbdesk.tui.format import line, palette
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.services import (
    ROLES,
    list_models,
    provider_rows,
    remove_provider,
    role_candidates,
    save_roles,
)
from kbdesk.tui.widgets.keys_footer import KeysFooter
from kbdesk.tui.widgets.model_picker import ModelPicker

PROVIDER_ACTIONS = {"add_provider", "edit_provider", "remove_provider", "test_provider"}
ROLE_HELP = {
    "embedding": "the model new knowledge bases embed with (each KB keeps its own)",
    "chat": "the model of the chat pane and `kbdesk ask`",
}


class SettingsScreen(DeskScreen):
    CSS_PATH = "settings.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="settings.back"),
        Binding("a", "add_provider", "Add", id="settings.add"),
        Binding("e", "edit_provider", "Edit", id="settings.edit"),
        Binding("d", "remove_provider", "Remove", id="settings.remove"),
        Binding("t", "test_provider", "Test", id="settings.test"),
        Binding("ctrl+s", "save_roles", "Save roles", id="settings.save_roles"),
    ]

    def compose(self) -> ComposeResult:
        config = self.desk.config
        yield Header()
        with TabbedContent(id="tabs"):
            with TabPane("Providers", id="providers"):
                yield DataTable(id="provider-table", cursor_type="row", zebra_stripes=True)
                with Horizontal(classes="buttons", id="provider-buttons"):
                    for label, action in (
                        ("Add", "add"),
                        ("Edit", "edit"),
                        ("Remove", "remove"),
                        ("Test connection", "test"),
                    ):
                        yield Button(label, id=f"{action}-provider", compact=True)
                yield Static(
                    Text("Press t to test a provider: kbdesk lists its models.", style="dim"), id="test-output"
                )
            with TabPane("Model roles", id="roles"), VerticalScroll():
                for role in ROLES:
                    chosen = getattr(config.roles, role)
                    yield Static(Text(f"{role.capitalize()}: {ROLE_HELP[role]}"), classes="panel-title")
                    with Container(classes="form"):
                        yield Label("Provider")
                        yield Select(
                            [(Text(p), p) for p in sorted(config.providers)],
                            value=(chosen.provider if chosen.provider in config.providers else Select.NULL),
                            prompt="choose a provider",
                            id=f"{role}-provider",
                            compact=True,
                        )
                        yield Label("Model")
                        yield ModelPicker(role, chosen.provider, chosen.model, autoload=False, id=f"{role}-model")
                with Horizontal(classes="buttons"):
                    yield Button("Save roles", variant="primary", id="save-roles", compact=True)
        yield KeysFooter()

    _roles_shown: dict[str, tuple[str | None, str | None]] | None = None
    """The model roles as the form showed them first (or last saved): what 'unsaved' compares to."""

    def on_mount(self) -> None:
        self.sub_title = "settings"
        self.call_after_refresh(self._remember_roles)
        table = self.query_one("#provider-table", DataTable)
        for label, width in (("Name", 12), ("Kind", 10), ("Base URL", 30), ("API key", 18)):
            table.add_column(label, key=label.lower(), width=width)
        self._fill_providers()

    def _fill_providers(self) -> None:
        table = self.query_one("#provider-table", DataTable)
        table.clear()
        for row in provider_rows(self.desk.config):
            table.add_row(line(row.name), line(row.kind), line(row.base_url), line(row.key), key=row.name)
        if not table.row_count:
            self._output(
                Text(
                    "No providers yet. Press a to add one: Ollama, LM Studio, llama.cpp, vLLM, OpenAI, "
                    "OpenRouter or any OpenAI-compatible server.",
                    style="dim",
                )
            )

    def _selected_provider(self) -> str | None:
        table = self.query_one("#provider-table", DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def _output(self, text: Text) -> None:
        self.query_one("#test-output", Static).update(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        try:
            tab = self.query_one(TabbedContent).active
        except NoMatches:  # not composed yet
            return True
        if action in PROVIDER_ACTIONS:
            return tab == "providers"
        if action == "save_roles":
            return tab == "roles"
        return True

    @on(TabbedContent.TabActivated)
    def _tab_changed(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()
        if event.pane.id == "roles":  # list models only when the roles are looked at
            for picker in self.query(ModelPicker):
                picker.ensure_loaded()

    def config_changed(self) -> None:
        self._fill_providers()
        providers = sorted(self.desk.config.providers)
        for role in ROLES:
            select = self.query_one(f"#{role}-provider", Select)
            current = select.value
            select.set_options([(Text(p), p) for p in providers])
            if current in providers:
                select.value = current

    # ── providers ──────────────────────────────────────────────────────────────
    @on(Button.Pressed, "#add-provider")
    def action_add_provider(self) -> None:
        from kbdesk.tui.screens.provider_form import ProviderFormScreen

        self.app.push_screen(ProviderFormScreen(), self._save_provider)

    @on(Button.Pressed, "#edit-provider")
    def action_edit_provider(self) -> None:
        from kbdesk.tui.screens.provider_form import ProviderFormScreen

        name = self._selected_provider()
        if name:
            self.app.push_screen(ProviderFormScreen(name), self._save_provider)

    def _save_provider(self, name: str | None) -> None:
        if name is not None:  # the dialog saved it
            self._config_saved(f"Saved provider '{name}'")

    def _config_saved(self, message: str) -> None:
        app: Any = self.app
        app.config_changed()
        self.notify(message, markup=False)

    @on(Button.Pressed, "#remove-provider")
    def action_remove_provider(self) -> None:
        name = self._selected_provider()
        if not name:
            return
        detail = (
            "It is removed from config.toml (with any key stored there). Knowledge bases that embed "
            "with it keep their vectors but cannot embed new text until a provider of that name exists."
        )

        def answer(yes: bool | None) -> None:
            if yes:
                self.in_thread(
                    remove_provider,
                    self.desk.paths.config_file,
                    name,
                    doing=f"removing provider '{name}'",
                    done=lambda _: self._config_saved(f"Removed provider '{name}'"),
                )

        self.app.push_screen(ConfirmScreen(f"Remove provider '{name}'?", detail, confirm="Remove"), answer)

    @on(Button.Pressed, "#test-provider")
    def action_test_provider(self) -> None:
        name = self._selected_provider()
        if not name:
            return
        self._output(line(f"asking '{name}' for its models…", style="dim"))
        self.in_thread(
            list_models,
            self.desk.config,
            name,
            doing=f"testing '{name}'",
            group="test",
            exclusive=True,
            done=lambda models: self._tested(name, models),
            failed=lambda error: self._output(line(f"✗ {error}", style=palette(self.app)["bad"])),
        )

    def _tested(self, name: str, models: list[ModelInfo]) -> None:
        embedding = role_candidates(models, "embedding")
        # model ids come from the server: data, shown inertly
        text = Text(
            inert_line(f"✓ '{name}' answered: {len(models)} models, {len(embedding)} embedding candidates") + "\n",
            style=palette(self.app)["ok"],
        )
        text.append(
            inert_line(", ".join(m.id + (f" ({m.model_type})" if m.model_type else "") for m in models)), style=""
        )
        self._output(text)

    # ── model roles ────────────────────────────────────────────────────────────
    @on(Select.Changed)
    def _role_provider_changed(self, event: Select.Changed) -> None:
        select_id = event.select.id or ""
        if not select_id.endswith("-provider"):
            return
        role = select_id.removesuffix("-provider")
        picker = self.query_one(f"#{role}-model", ModelPicker)
        provider = event.value if isinstance(event.value, str) else None
        if provider != picker.provider:
            picker.load(provider)

    def _roles_form(self) -> dict[str, tuple[str | None, str | None]]:
        roles: dict[str, tuple[str | None, str | None]] = {}
        for role in ROLES:
            provider = self.query_one(f"#{role}-provider", Select).value
            roles[role] = (
                provider if isinstance(provider, str) else None,
                self.query_one(f"#{role}-model", ModelPicker).value,
            )
        return roles

    def unsaved_roles(self) -> bool:
        """The model roles on screen were changed since they were shown or last saved."""
        return self._roles_shown is not None and self._roles_form() != self._roles_shown

    def _remember_roles(self) -> None:
        self._roles_shown = self._roles_form()

    def action_back(self) -> None:
        """Back to where Settings was opened; unsaved model roles are not dropped without asking."""
        if not self.unsaved_roles():
            self.dismiss_screen()
            return
        self.app.push_screen(
            ConfirmScreen(
                "Leave without saving the model roles?",
                "The roles you changed are not saved: ctrl+s saves them. Leaving drops the changes.",
                confirm="Leave",
            ),
            lambda yes: self.dismiss_screen() if yes else None,
        )

    def dismiss_screen(self) -> None:
        if self.app.screen is self:
            self.app.pop_screen()

    @on(Button.Pressed, "#save-roles")
    def action_save_roles(self) -> None:
        roles = self._roles_form()

        def saved(_: object) -> None:
            self._config_saved("Saved model roles")
            self._remember_roles()

        self.in_thread(save_roles, self.desk.paths.config_file, roles, doing="saving model roles", done=saved)
