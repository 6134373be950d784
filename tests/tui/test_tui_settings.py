"""Pilot tests: providers, the connection test, and the model role picker in every mode."""

from __future__ import annotations

import socket
import stat

from textual.widgets import DataTable, Input, Select, Static, TabbedContent

from ingest_support import configure_provider
from kbdesk.paths import get_paths
from kbdesk.tui.app import make_app
from kbdesk.tui.screens.base import FormError
from kbdesk.tui.screens.provider_form import ProviderFormScreen
from kbdesk.tui.screens.settings import SettingsScreen
from kbdesk.tui.widgets.model_picker import LIST, MANUAL, ModelPicker
from tui_support import current_screen, notifications, press_into, settle


def set_roles(embedding: str | None, chat: str | None = None, provider: str = "fake") -> None:
    path = get_paths().config_file
    text = path.read_text()
    if embedding:
        text += f'[roles.embedding]\nprovider = "{provider}"\nmodel = "{embedding}"\n'
    if chat:
        text += f'[roles.chat]\nprovider = "{provider}"\nmodel = "{chat}"\n'
    path.write_text(text)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def open_roles(app, pilot) -> SettingsScreen:
    await settle(pilot)
    await pilot.press("s")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, SettingsScreen)
    screen.query_one(TabbedContent).active = "roles"
    await settle(pilot)
    return screen


async def test_picker_lists_candidates_with_the_tolerant_filter(fake_openai):
    from kbdesk import open_desk

    configure_provider(fake_openai)
    set_roles("text-embedding-3-small", "llama3.2")
    with open_desk() as desk:
        app = make_app(desk)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_roles(app, pilot)
            embedding = screen.query_one("#embedding-model", ModelPicker)
            assert embedding.mode == LIST
            # typed embedding models first, then untyped ones; chat/llm models left out
            assert [m.id for m in embedding.models] == ["nomic-embed-text", "text-embedding-3-small", "mystery"]
            assert embedding.value == "text-embedding-3-small"
            chat = screen.query_one("#chat-model", ModelPicker)
            assert chat.mode == LIST and chat.value == "llama3.2"
            assert "nomic-embed-text" not in [m.id for m in chat.models]
            # the pencil switches to typing, keeping the choice; and back
            await pilot.click("#embedding-model #toggle")
            await settle(pilot)
            assert embedding.mode == MANUAL
            assert embedding.query_one("#manual", Input).value == "text-embedding-3-small"
            embedding.query_one("#manual", Input).value = "nomic-embed-text"
            await pilot.click("#embedding-model #toggle")
            await settle(pilot)
            assert embedding.mode == LIST and embedding.value == "nomic-embed-text"
            # save: config.toml changes and the desk uses it at once
            await pilot.press("ctrl+s")
            await settle(pilot)
            assert desk.config.roles.embedding.model == "nomic-embed-text"
            assert 'model = "nomic-embed-text"' in get_paths().config_file.read_text()


async def test_picker_empty_list_switches_to_manual(fake_openai):
    from kbdesk import open_desk

    fake_openai.models = []
    configure_provider(fake_openai)
    set_roles("text-embedding-3-small")
    with open_desk() as desk:
        app = make_app(desk)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_roles(app, pilot)
            picker = screen.query_one("#embedding-model", ModelPicker)
            assert picker.mode == MANUAL
            assert picker.value == "text-embedding-3-small"
            assert "lists no embedding models" in str(picker.query_one("#note", Static).render())


async def test_picker_saved_id_not_in_list_shows_in_manual_mode(fake_openai):
    from kbdesk import open_desk

    configure_provider(fake_openai)
    set_roles("my-own-embedder")
    with open_desk() as desk:
        app = make_app(desk)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_roles(app, pilot)
            picker = screen.query_one("#embedding-model", ModelPicker)
            assert picker.mode == MANUAL
            assert picker.value == "my-own-embedder"
            assert len(picker.models) == 3  # the list is there to switch to
            await pilot.click("#embedding-model #toggle")
            await settle(pilot)
            assert picker.mode == LIST


async def test_unreachable_provider_picker_and_connection_test():
    from kbdesk import open_desk

    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[providers.gone]\nkind = "custom"\nbase_url = "{closed_port_url()}"\n'
        '[roles.embedding]\nprovider = "gone"\nmodel = "bge-small"\n'
    )
    with open_desk() as desk:
        app = make_app(desk)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("s")
            await settle(pilot)
            screen = app.screen
            await pilot.press("t")  # test connection of the highlighted provider
            await settle(pilot)
            output = str(screen.query_one("#test-output", Static).render())
            assert output.startswith("✗") and "gone" in output
            assert any("provider 'gone'" in m for m in notifications(app))
            screen.query_one(TabbedContent).active = "roles"
            await settle(pilot)
            picker = screen.query_one("#embedding-model", ModelPicker)
            assert picker.mode == MANUAL and picker.value == "bge-small"
            assert "could not list models" in str(picker.query_one("#note", Static).render())


async def test_add_a_provider_with_a_stored_key_that_never_shows(tui_desk):
    app = make_app(tui_desk)
    secret = "sk-test-0123456789abcdef"
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, ProviderFormScreen)
        form.query_one("#name", Input).value = "openai"
        form.query_one("#kind", Select).value = "openai"
        form.query_one("#api_key", Input).value = secret
        await pilot.press("ctrl+s")
        await settle(pilot)
        path = get_paths().config_file
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert secret in path.read_text()
        assert "openai" in tui_desk.config.providers  # the desk reloaded its config
        table = app.screen.query_one("#provider-table", DataTable)
        assert table.row_count == 1
        assert secret not in app.export_screenshot()
        # editing keeps the key unless a new one is typed, and never puts it in the form
        await pilot.press("e")
        await settle(pilot)
        assert app.screen.query_one("#api_key", Input).value == ""
        assert secret not in app.export_screenshot()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert secret in path.read_text()


async def test_leaving_model_roles_with_unsaved_changes_asks_first(tui_desk):
    from kbdesk.tui.screens.confirm import ConfirmScreen

    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_into(pilot, "s", SettingsScreen)
        await pilot.press("escape")  # nothing changed: back at once
        await settle(pilot)
        assert not isinstance(app.screen, SettingsScreen)
        settings = await press_into(pilot, "s", SettingsScreen)
        settings.query_one(TabbedContent).active = "roles"
        await settle(pilot)
        settings.query_one("#chat-model", ModelPicker).query_one("#manual", Input).value = "typed-model"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and "without saving" in app.screen.question
        await pilot.press("n")  # stay: the change is still there
        await settle(pilot)
        assert current_screen(app) is settings and settings.unsaved_roles()
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("y")  # leave, dropping it
        await settle(pilot)
        assert not isinstance(app.screen, SettingsScreen)
        assert tui_desk.config.roles.chat.model is None


async def test_only_viewing_the_model_roles_leaves_without_asking(fake_openai):
    """Opening the roles tab lists the providers' models and shows the saved ones chosen:
    nothing changed, so Escape leaves at once (no "Leave without saving?")."""
    from kbdesk import open_desk

    configure_provider(fake_openai)
    set_roles("text-embedding-3-small", "llama3.2")
    with open_desk() as desk:
        app = make_app(desk)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_roles(app, pilot)
            assert screen.query_one("#chat-model", ModelPicker).models  # the lists came in
            assert not screen.unsaved_roles()
            await pilot.press("escape")
            await settle(pilot)
            assert not isinstance(app.screen, SettingsScreen)


async def test_a_refused_provider_url_keeps_the_form_and_says_why(tui_desk):
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, ProviderFormScreen)
        url = "http://me:hunter2@localhost:8080/v1"
        form.query_one("#name", Input).value = "mine"
        form.query_one("#base_url", Input).value = url
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is form and form.query_one("#base_url", Input).value == url  # kept as typed
        line = form.query_one(FormError)
        assert line.display and "user name or password" in str(line.render())
        assert "hunter2" not in str(line.render())
        assert "mine" not in tui_desk.config.providers
