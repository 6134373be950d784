"""The kbdesk Textual app: built from a desk by one factory, used by the CLI and the tests.

The app holds the services (the desk), the one place where worker errors become
notifications (:meth:`KbdeskApp.report_error`), and the ingestion runs: they belong to
the app, not to a screen, so indexing goes on while the user moves between screens.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from kbdesk.errors import KbdeskError
from kbdesk.ingest.child import ChildDied, IngestJob
from kbdesk.models import KnowledgeBase
from kbdesk.textsafe import inert_line
from kbdesk.tui.doc_cache import DocRowsCache
from kbdesk.tui.ingest_runs import INGEST_GROUP, IngestRuns
from kbdesk.tui.messages import IngestProgress
from kbdesk.tui.progress import IngestTracker
from kbdesk.tui.workers import Blocking, wait_for_threads

if TYPE_CHECKING:
    from kbdesk.desk import Desk
    from kbdesk.tui.collector import IdleCollector

EXIT_WAIT_S = 15.0  # a cancelled run stops after its batch in flight
QUIT_DIALOG = "quit-while-indexing"
ANSWERING = (WorkerState.PENDING, WorkerState.RUNNING)
AUTO_RESUME_ENV = "KBDESK_AUTO_RESUME"
"""Set to 1 to resume unfinished documents as soon as the app finds them (``make_app(auto_resume=...)``)."""


class KbdeskApp(IngestRuns, Blocking, App[None]):
    """Knowledge bases, live ingestion, search and settings over one desk."""

    CSS_PATH = "app.tcss"
    TITLE = "kbdesk"
    SUB_TITLE = "knowledge desk"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1,question_mark", "help", "Help", id="app.help"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        # shown in the footer of the KB list (which binds them too); help and the palette list them
        Binding("c", "open_chat", "Chat", id="app.chat", show=False),
        Binding("j", "open_notes", "Notes", id="app.notes", show=False),
    ]

    def __init__(
        self,
        desk: Desk,
        *,
        owns_desk: bool = False,
        watch_css: bool = False,
        auto_resume: bool = False,
        ingest_in_child: bool = True,
        tune_collector: bool = False,
    ) -> None:
        super().__init__(watch_css=watch_css)
        self.desk = desk
        self._owns_desk = owns_desk
        self.auto_resume = auto_resume
        """Resume unfinished documents as soon as they are found, without asking."""
        self.ingest_in_child = ingest_in_child
        """Index in a child process (its own interpreter, so the UI never waits for the run's
        threads); runs of a desk another process cannot open the same way stay in this one."""
        self.tune_collector = tune_collector
        """The process is the app's: set its garbage collector for short pauses (:mod:`.collector`)."""
        self.idle_collector: IdleCollector | None = None
        """With ``tune_collector``: collects garbage between keys."""
        self.trackers: dict[str, IngestTracker] = {}
        self._ingest_workers: dict[str, Worker[Any]] = {}
        self._ingestors: dict[str, Any] = {}  # what cancels each run: its ChildRun or its Ingestor
        self.doc_rows = DocRowsCache(self)
        """The documents table's rows of each KB, read ahead and kept."""
        self.unfinished: dict[str, int] = {}
        """Unfinished documents by KB id, as last counted (no run of this app holds them)."""

    # ── lifecycle ──────────────────────────────────────────────────────────────
    def on_mount(self) -> None:
        from kbdesk.tui.screens.kb_list import KbListScreen

        self.push_screen(KbListScreen())
        self.count_unfinished(announce=True)
        if self.tune_collector:
            from kbdesk.tui import collector

            collector.tune()
            self.call_after_refresh(collector.freeze)  # once the first screen is up
            self.idle_collector = collector.IdleCollector(busy=self._answering)
            self.set_interval(collector.CHECK_EVERY_S, self.idle_collector.tick, name="idle collector")

    def _answering(self) -> bool:
        """A worker of the app or a screen is running (a read whose answer the user waits for);
        ingestion runs go on for minutes beside the user and do not count."""
        return any(w.state in ANSWERING and w.group != INGEST_GROUP for w in self.workers)

    async def on_event(self, event: events.Event) -> None:
        if self.idle_collector is not None and isinstance(event, events.InputEvent):
            self.idle_collector.input()  # the user is acting: no collection now
        await super().on_event(event)

    # ── unfinished documents (a run that was stopped or killed) ────────────────
    def count_unfinished(self, announce: bool = False) -> None:
        """Count them in a worker; screens hear of it through ``unfinished_changed``."""

        def count() -> dict[str, int]:
            out: dict[str, int] = {}
            for doc in self.desk.unfinished_documents():
                out[doc.kb_id] = out.get(doc.kb_id, 0) + 1
            return out

        self.in_thread(
            count,
            doing="counting unfinished documents",
            group="unfinished",
            exclusive=True,
            done=lambda counts: self._counted(counts, announce),
        )

    def _counted(self, counts: dict[str, int], announce: bool) -> None:
        self.unfinished = {kb_id: n for kb_id, n in counts.items() if not self.ingesting(kb_id)}
        self._tell_unfinished()
        total = sum(self.unfinished.values())
        if not total:
            return
        if self.auto_resume:
            self.action_resume_all()
        elif announce:
            self.notify(
                f"{total} document(s) were left unfinished when indexing last stopped. Press u to resume them.",
                title="Unfinished documents",
                severity="warning",
                timeout=10,
                markup=False,
            )

    def resume(self, kb: KnowledgeBase, *, expected: int = 0) -> IngestTracker | None:
        """Finish what earlier runs left of ``kb`` (a worker, with progress like any add)."""
        kb_id = kb.id
        tracker = self.start_ingest(
            kb, "Resuming", IngestJob("resume", (kb_id,)), expected=expected or self.unfinished.get(kb.id, 0)
        )
        if tracker is not None:
            self.unfinished.pop(kb.id, None)
        return tracker

    def action_resume_all(self) -> None:
        """Resume every KB with unfinished documents (one run each)."""
        pending = dict(self.unfinished)
        if not pending:
            self.notify("Nothing to resume: no document was left unfinished", markup=False)
            return

        def start(kbs: list[KnowledgeBase]) -> None:
            for kb in kbs:
                if kb.id in pending:
                    self.resume(kb, expected=pending[kb.id])
            self._tell_unfinished()

        self.in_thread(self.desk.list_kbs, doing="finding the KBs to resume", done=start)

    def _tell_unfinished(self) -> None:
        for screen in self.screen_stack:
            changed = getattr(screen, "unfinished_changed", None)
            if changed is not None and screen.is_mounted:
                changed()

    def on_unmount(self) -> None:
        """Stop indexing between batches (nothing is half-written: a resume finishes it), let the
        threads still reading or writing end, then close the desk — never under a running query.
        No indexing process outlives the app."""
        self.stop_ingest_runs(EXIT_WAIT_S)
        if not self._owns_desk:  # whoever opened the desk closes it
            return
        if not wait_for_threads(EXIT_WAIT_S):
            self.log.warning("threads still busy at exit; the desk is left to the process's end")
            return
        self.desk.close()

    # ── the one place errors are reported ──────────────────────────────────────
    def report_error(self, error: BaseException | None, doing: str = "") -> None:
        """A notification for a failure: its one-line message, never a traceback."""
        if error is None:
            return
        doing = inert_line(doing)
        title = doing[:1].upper() + doing[1:] if doing else "Error"
        if isinstance(error, KbdeskError):
            message = str(error) or type(error).__name__
        else:
            self.log.error("".join(traceback.format_exception(error)))
            message = f"internal error: {type(error).__name__}: {error}"
        # messages quote file names and document text: shown, never obeyed by the terminal
        self.notify(
            inert_line(message), title=f"{title} failed" if doing else title, severity="error", timeout=10, markup=False
        )

    # ── ingestion runs (started and stopped by IngestRuns) ─────────────────────
    @on(IngestProgress)
    def _ingest_tick(self, message: IngestProgress) -> None:
        self._dispatch_progress(message.kb_id)
        # events that came after this tick was posted are picked up a moment later
        self.set_timer(0.3, partial(self._trailing, message.kb_id))

    def _trailing(self, kb_id: str) -> None:
        tracker = self.trackers.get(kb_id)
        if tracker is not None and tracker.pending():
            self._dispatch_progress(kb_id)

    def _dispatch_progress(self, kb_id: str) -> None:
        tracker = self.trackers.get(kb_id)
        if tracker is None:
            return
        changes = tracker.drain()
        for screen in self.screen_stack:
            show = getattr(screen, "show_ingest", None)
            if show is not None and screen.is_mounted:
                show(tracker, changes)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != INGEST_GROUP:
            super().on_worker_state_changed(event)  # the app's own in_thread calls
            return
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        kb_id = next((k for k, w in self._ingest_workers.items() if w is worker), None)
        tracker = self.trackers.get(kb_id) if kb_id else None
        if event.state == WorkerState.ERROR:
            self.report_error(worker.error, worker.name)
        elif tracker is not None:
            summary = tracker.summary()
            severity: SeverityLevel = "warning" if " failed" in summary else "information"
            self.notify(inert_line(summary), title="Indexing finished", severity=severity, markup=False)
        if kb_id:
            self._dispatch_progress(kb_id)
            for screen in self.screen_stack:
                finished = getattr(screen, "ingest_finished", None)
                if finished is not None and screen.is_mounted:
                    finished(kb_id)
            self.count_unfinished(announce=isinstance(worker.error, ChildDied))  # how to resume what it left

    # ── config ─────────────────────────────────────────────────────────────────
    def config_changed(self) -> None:
        """config.toml was written: reload it into the desk and tell the screens."""
        self.desk.reload_config()
        for screen in self.screen_stack:
            changed = getattr(screen, "config_changed", None)
            if changed is not None:
                changed()

    # ── actions and the command palette ────────────────────────────────────────
    def action_help(self) -> None:
        from kbdesk.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_open_search(self, kb_names: list[str] | None = None) -> None:
        from kbdesk.tui.screens.search import SearchScreen

        self.push_screen(SearchScreen(kb_names))

    def action_open_settings(self) -> None:
        from kbdesk.tui.screens.settings import SettingsScreen

        if not isinstance(self.screen, SettingsScreen):
            self.push_screen(SettingsScreen())

    def action_open_chat(self) -> None:
        from kbdesk.tui.screens.chat import ChatScreen

        chat = self._chat_service()
        if chat is not None:
            self._bring(ChatScreen, lambda: ChatScreen(chat))

    def action_open_notes(self) -> None:
        from kbdesk.tui.screens.notes import NotesScreen

        chat = self._chat_service()
        if chat is not None:
            self._bring(NotesScreen, lambda: NotesScreen(chat))

    def _chat_service(self) -> Any:
        try:
            return self.desk.chat()
        except KbdeskError as exc:  # a store that does not hold conversations and notes
            self.report_error(exc, "opening the chat")
            return None

    def _bring(self, kind: type[Screen[Any]], make: Callable[[], Screen[Any]]) -> None:
        """Back to the screen of ``kind`` if it is open (closing those above it), else open one."""
        if isinstance(self.screen, kind):
            return
        if any(isinstance(s, kind) for s in self.screen_stack):
            while not isinstance(self.screen, kind):
                self.pop_screen()
            return
        self.push_screen(make())

    async def action_quit(self) -> None:
        if not self.ingesting():
            self.exit()
            return
        from kbdesk.tui.screens.confirm import ConfirmScreen

        def answer(yes: bool | None) -> None:
            if yes:
                self.exit()

        if not self.is_screen_installed(QUIT_DIALOG):  # built once, shown again at once the next times
            self.install_screen(
                ConfirmScreen(
                    "Indexing is still running. Quit anyway?",
                    "Documents not finished yet are picked up again the next time you add files or resume.",
                    confirm="Quit",
                ),
                QUIT_DIALOG,
            )
        self.push_screen(QUIT_DIALOG, answer)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Search knowledge bases", "Search by meaning and keyword, with scores", self.action_open_search
        )
        yield SystemCommand(
            "Settings", "Providers (base URL, API key, test) and model roles", self.action_open_settings
        )
        yield SystemCommand(
            "Chat", "Ask the knowledge bases: conversations, sources, KB toggles (c)", self.action_open_chat
        )
        yield SystemCommand("Notes", "Write, edit and search short notes (j)", self.action_open_notes)
        yield SystemCommand("Help", "Keys and how kbdesk works", self.action_help)
        if self.unfinished:
            yield SystemCommand(
                f"Resume {sum(self.unfinished.values())} unfinished document(s)",
                "Finish what an earlier indexing run left half-way, in every KB (u)",
                self.action_resume_all,
            )
        commands = getattr(screen, "palette_commands", None)
        if commands is not None:
            yield from commands()


def make_app(
    desk: Desk,
    *,
    owns_desk: bool = False,
    auto_resume: bool | None = None,
    ingest_in_child: bool = True,
    tune_collector: bool = False,
) -> KbdeskApp:
    """The app over ``desk`` (from :func:`kbdesk.open_desk`): the one factory. ``auto_resume``
    (default: the config's ``ingest.auto_resume``, or ``$KBDESK_AUTO_RESUME`` set to 1) resumes
    unfinished documents without asking."""
    if auto_resume is None:
        auto_resume = bool(desk.config.ingest.auto_resume) or os.environ.get(AUTO_RESUME_ENV, "").strip().lower() in (
            "1",
            "true",
            "yes",
        )
    return KbdeskApp(
        desk,
        owns_desk=owns_desk,
        auto_resume=auto_resume,
        ingest_in_child=ingest_in_child,
        tune_collector=tune_collector,
    )


def build_app(db: str | os.PathLike[str] | None = None, home: str | os.PathLike[str] | None = None) -> KbdeskApp:
    """Open the desk (as the CLI does) and build the app, which closes the desk at exit; the
    process is the app's (its garbage collector is set for short pauses)."""
    from kbdesk.desk import open_desk

    return make_app(open_desk(db, home=home), owns_desk=True, tune_collector=True)


def run(db: str | None = None, home: str | None = None) -> None:
    build_app(db, home).run()
