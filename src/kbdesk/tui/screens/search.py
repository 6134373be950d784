"""Search with scores: query, KBs, mode, limit, threshold and a filter line; why each hit
ranked (or not)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Header, Input, Label, Select, Static

from kbdesk.errors import InvalidInputError
from kbdesk.filters import Filters
from kbdesk.filters_text import parse_line
from kbdesk.search import MODES, NeedsVectorsError, SearchResponse
from kbdesk.textsafe import inert, inert_line
from kbdesk.tui.format import line, score, significant, where_label
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.widgets.filter_input import FilterInput
from kbdesk.tui.widgets.keys_footer import KeysFooter
from kbdesk.tui.widgets.results_table import ResultsTable

HINT = (
    "Type a query and press Enter. Each row shows the similarity, the vector rank, the keyword rank "
    "and the fused score; candidates the threshold or the limit cut are listed too (ctrl+t hides "
    "them). Enter on a row opens the chunk with its neighbours. The filter line narrows the search "
    "to documents: tag:q3 path:work/** not:work/old/** type:md since:2026-11-01 until:… any:a,b (→ completes "
    "tags and folders)."
)
FILTER_HELP = "Write the filter as key:value words — tag:q3 path:work/** type:md since:2026-11-01 — or clear it."


class SearchScreen(DeskScreen):
    CSS_PATH = "search.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="search.back"),
        Binding("ctrl+o", "choose_kbs", "KBs", id="search.kbs"),
        Binding("ctrl+t", "toggle_cut", "Show/hide cut", id="search.cut"),
        Binding("ctrl+l", "focus_query", "Query", id="search.query"),
        Binding("ctrl+f", "focus_filter", "Filter", id="search.filter"),
        Binding("down", "to_results", "Results", id="search.results", show=False),
    ]

    def __init__(self, kb_names: list[str] | None = None) -> None:
        super().__init__()
        self.kb_names = list(kb_names or [])
        self.show_cut = True
        self.response: SearchResponse | None = None
        self.filters = Filters()

    def compose(self) -> ComposeResult:
        config = self.desk.config.search
        yield Header()
        yield Input(placeholder="search… (Enter)", id="query")
        with Horizontal(id="filter-row"):
            yield Label("Filter")
            yield FilterInput(id="filter")
        with Horizontal(id="options"):
            yield Label("Mode")
            yield Select([(m, m) for m in MODES], value=config.mode, allow_blank=False, id="mode", compact=True)
            yield Label("Limit")
            yield Input(str(config.limit), type="integer", id="limit", compact=True)
            yield Label("Threshold")
            yield Input(f"{config.threshold:g}", type="number", id="threshold", compact=True)
            yield Button("KBs: …", id="kbs", compact=True)
        yield Static("", id="search-notice")
        yield ResultsTable(id="results")
        yield Static(Text(HINT), id="preview")
        yield Static("", id="search-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = "search"
        self.query_one("#search-notice", Static).display = False
        if not self.kb_names:
            self.in_thread(
                self.desk.list_kbs,
                doing="loading knowledge bases",
                done=lambda kbs: self._set_kbs([kb.name for kb in kbs]),
            )
        else:
            self._set_kbs(self.kb_names)
        self.query_one("#query", Input).focus()

    def on_resize(self) -> None:
        self._set_kbs(self.kb_names)

    def _set_kbs(self, names: list[str]) -> None:
        if names and names != getattr(self, "_hinted", None):
            self._hinted = list(names)
            self.in_thread(
                self.desk.filter_hints,
                list(names),
                doing="reading tags and folders",
                group="filter-hints",
                exclusive=True,
                done=self.query_one("#filter", FilterInput).set_hints,
            )
        self.kb_names = names
        label = f"KBs: {', '.join(names) if names else 'none'}"
        room = max(20, self.size.width - 54)  # beside mode, limit and threshold
        if len(label) > room:  # cut, and showing that it is (^o lists them all)
            label = label[: room - 1] + "…"
        self.query_one("#kbs", Button).label = line(label)

    # ── searching ──────────────────────────────────────────────────────────────
    @on(Input.Submitted)
    @on(Select.Changed, "#mode")
    def run_search(self) -> None:
        query = self.query_one("#query", Input).value.strip()
        if not query:
            return
        if not self.kb_names:
            self.notify("No knowledge base to search: create one first, or pick some (ctrl+o)", severity="warning")
            return
        try:
            limit = int(self.query_one("#limit", Input).value or 5)
            threshold = float(self.query_one("#threshold", Input).value or 0.3)
        except ValueError:
            self.notify("limit is a whole number and threshold a number", severity="warning")
            return
        try:
            filters = parse_line(self.query_one("#filter", FilterInput).value)
        except InvalidInputError as exc:
            self._filter_refused(exc)
            return
        self.filters = filters
        mode: Any = self.query_one("#mode", Select).value
        self._status(line(f"searching {', '.join(self.kb_names)}…", style="dim"))
        self.in_thread(
            self.desk.search,
            list(self.kb_names),
            query,
            limit=limit,
            threshold=threshold,
            mode=str(mode),
            explain=True,
            filters=filters or None,
            doing="searching",
            group="search",
            exclusive=True,
            done=self._show,
            failed=self._failed,
        )

    def _filter_refused(self, error: BaseException) -> None:
        """A filter line that does not read: nothing is searched; the status line says what
        is wrong with which word, and how a filter is written."""
        text = Text(inert_line(str(error)).replace("filter", "Filter", 1), style="bold")
        text.append("\n" + FILTER_HELP, style="italic")
        self._status(text)
        self.notify(inert_line(str(error)), title="Filter", severity="warning")

    def _failed(self, error: BaseException) -> None:
        """The search failed: its results are gone (never the last query's, as if they were
        this one's), and the status line says what to do, in this screen's words."""
        self.response = None
        self.query_one(ResultsTable).show([], self.show_cut)
        self._banner(None)
        self._preview()
        text = Text(inert_line(str(error) if str(error) else type(error).__name__), style="bold")
        if isinstance(error, NeedsVectorsError):
            text.append("\nChoose keyword in Mode to search these knowledge bases by their words.", style="italic")
        self._status(text)

    def _banner(self, notice: str | None) -> None:
        banner = self.query_one("#search-notice", Static)
        banner.display = bool(notice)
        banner.update(Text(f"⚠ {inert_line(notice)}", style="bold") if notice else "")

    def _show(self, response: SearchResponse) -> None:
        self.response = response
        table = self.query_one(ResultsTable)
        table.show(response.explain or [], self.show_cut)
        remotes = [s.note for s in getattr(response, "remotes", []) if s.state != "searched"]  # remote KBs' state
        self._banner("; ".join(n for n in (response.notice, *remotes) if n) or None)
        self._status(self._explain_summary(response))
        self._preview()

    def _explain_summary(self, response: SearchResponse) -> Text:
        explain = response.explain or []
        cut: dict[str, int] = {}
        for hit in explain:
            if hit["cut"]:
                cut[hit["cut"]] = cut.get(hit["cut"], 0) + 1
        threshold = self.query_one("#threshold", Input).value
        text = line(f"{response.mode} · {len(response.results)} result(s) from {', '.join(response.searched_kbs)}")
        if self.filters:
            text.append(line(f" · within {self.filters.describe()}"))
        if cut:
            text.append(" · cut: " + ", ".join(f"{n} by {why}" for why, n in sorted(cut.items())))
        if not response.results:
            best = max((h["cosine"] for h in explain if h.get("cosine") is not None), default=None)
            if best is not None and cut.get("threshold"):
                text.append(
                    f"\nNothing passed: the best cosine is {best:.3f}, under the threshold {threshold}. "
                    "Lower the Threshold, or choose keyword in Mode.",
                    style="bold",
                )
            elif not explain:
                text.append(
                    "\nNo candidate at all: no chunk shares a word with the query"
                    + (" and no vectors were searched." if response.mode == "keyword" else "."),
                    style="bold",
                )
        for note in response.notes:
            text.append("\n" + inert_line(note), style="italic")
        return text

    def _status(self, text: Text) -> None:
        self.query_one("#search-status", Static).update(text)

    @on(DataTable.RowHighlighted, "#results")
    def _preview(self) -> None:
        hit = self.query_one(ResultsTable).selected
        preview = self.query_one("#preview", Static)
        if hit is None:
            preview.update(Text(HINT))
            return
        where = where_label(hit.get("metadata") or {})
        head = Text()
        head.append(inert_line(hit["source"]) + (f" · {where}" if where else ""), style="bold")
        kb = inert_line(hit["kb"])
        kind = hit.get("score_kind") or (hit.get("metadata") or {}).get("score_kind")
        head.append(
            f"\n{kb} · similarity {score(hit['similarity'])}{f' ({inert_line(kind)})' if kind else ''} · "
            f"cosine {score(hit['cosine'])} · vector rank {hit['vector_rank'] or '–'} · keyword rank "
            f"{hit['keyword_rank'] or '–'} (BM25 {significant(hit['keyword_score'])}) · "
            f"fused {score(hit['fused'], 4)}" + (f" · cut by {hit['cut']}" if hit["cut"] else ""),
            style="dim",
        )
        head.append("\n" + inert(" ".join(hit["content"].split())[:400]))
        preview.update(head)

    @on(DataTable.RowSelected, "#results")
    def open_hit(self) -> None:
        from kbdesk.tui.screens.chunk import ChunkScreen

        hit = self.query_one(ResultsTable).selected
        if hit is not None:
            self.app.push_screen(ChunkScreen(hit))

    # ── options ────────────────────────────────────────────────────────────────
    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", FilterInput).focus()

    def action_toggle_cut(self) -> None:
        self.show_cut = not self.show_cut
        if self.response is not None:
            self._show(self.response)

    @on(Button.Pressed, "#kbs")
    def action_choose_kbs(self) -> None:
        from kbdesk.tui.screens.choose_kbs import ChooseKbsScreen

        self.app.push_screen(ChooseKbsScreen(self.kb_names), self._kbs_chosen)

    def _kbs_chosen(self, names: list[str] | None) -> None:
        if names is None or names == self.kb_names:
            return
        self._set_kbs(names)
        # results of the KBs chosen before would be misleading: search again, or clear them
        if self.query_one("#query", Input).value.strip() and names:
            self.run_search()
        else:
            self.response = None
            self.query_one(ResultsTable).show([], self.show_cut)
            self._banner(None)
            self._status(Text(""))
            self._preview()

    def action_to_results(self) -> None:
        """Down in the query box moves into the results (the box itself has no use for Down)."""
        table = self.query_one(ResultsTable)
        if table.row_count:
            table.focus()
