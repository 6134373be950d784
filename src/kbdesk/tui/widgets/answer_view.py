"""One answer in the transcript: its text as Markdown while it streams, the tool calls and
notices between rounds, what the turn is doing (thinking, waiting for the model, stopped),
whether the KBs were searched, and the sources.

Each round's text is an :class:`AnswerMarkdown` fed only the characters that came since
the last look. It hands them to ``Markdown.append`` one append at a time, joining what
arrives meanwhile into the next (as Textual's ``MarkdownStream`` does, but stoppable at
any moment without two appends overlapping): an append re-parses only the document's last
block, so a long answer never re-renders itself, let alone the transcript.

What the model wrote is data. Markdown's text is never markup; HTML shows as typed (the
parser has it off); a clicked link opens nothing — a notification names the address.
"""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Markdown, Static

from kbdesk.chat.safety import clean, one_line
from kbdesk.tui.chat_state import AnswerState, CallLine, NoticePart, Part, TextPart
from kbdesk.tui.format import palette

_MARKS = {"running": "⋯", "ok": "✓", "error": "✗", "stopped": "–"}


def answer_parser() -> MarkdownIt:
    """Textual's GFM-like parser with HTML off: ``<b>`` in an answer is text to read
    (with HTML on, Textual would drop it without a trace)."""
    return MarkdownIt("gfm-like", {"html": False})


def source_label(source: dict[str, Any]) -> str:
    return one_line(source.get("label") or source.get("source") or "?", 120)


def head_text(state: AnswerState) -> Text:
    return Text("assistant" + (f" · {one_line(state.model, 40)}" if state.model else ""), style="dim")


def part_text(part: CallLine | NoticePart, colours: dict[str, str]) -> Text:
    """A tool call (with how it went) or a notice, on one line."""
    out = Text()
    if isinstance(part, CallLine):
        style = {"ok": colours["ok"], "error": colours["bad"], "running": colours["busy"]}.get(part.state, "dim")
        out.append(f"{_MARKS.get(part.state, '·')} {part.label}", style=style)
        detail = part.error if part.state == "error" and part.error else part.summary
        if detail:
            out.append(f" — {one_line(detail, 200)}", style="dim")
    else:
        mark, style = {"error": ("✗", f"bold {colours['bad']}"), "warning": ("!", colours["busy"])}.get(
            part.level, ("i", colours["info"])
        )
        out.append(f"{mark} {one_line(part.text, 600)}", style=style)
    return out


def foot_text(state: AnswerState, colours: dict[str, str]) -> Text:
    """Under the answer: KBs searched or not, cut at the limit, history trimmed; the sources."""
    out = Text()
    for line in state.notes:
        out.append(("\n" if out else "") + line, style="dim italic")
    if state.sources:
        out.append(("\n" if out else "") + "Sources", style="bold")
        for source in state.sources:
            out.append(f"\n [{source.get('n', '?')}] ", style=colours["info"])
            out.append(source_label(source))
    return out


class AnswerMarkdown(Markdown):
    """One round's text, appended as it comes (see the module's docstring)."""

    def __init__(self, text: str = "") -> None:
        super().__init__(parser_factory=answer_parser, open_links=False, classes="answer-text")
        self.fed = 0
        """Characters of the round handed to :meth:`feed` so far."""
        self._pending: list[str] = []
        self._appending = False
        self._ready = False
        self.feed(text)

    def feed(self, text: str) -> None:
        """Append ``text`` to the document (now, or after the append under way)."""
        if not text:
            return
        self.fed += len(text)
        self._pending.append(clean(text))
        self._start()

    def on_mount(self) -> None:
        self.call_later(self._begin)  # after Markdown's own mount has laid out the empty document

    def _begin(self) -> None:
        self._ready = True
        self._start()

    def _start(self) -> None:
        if self._ready and self._pending and not self._appending:
            self._appending = True
            self.run_worker(self._append_pending(), group="markdown", exit_on_error=False)

    async def _append_pending(self) -> None:
        try:
            while self._pending:
                text = "".join(self._pending)
                self._pending.clear()
                await self.append(text)
        finally:
            self._appending = False


class AnswerView(Vertical):
    """An answer, kept in step with its :class:`AnswerState` by :meth:`show_state`."""

    def __init__(self, state: AnswerState) -> None:
        super().__init__(classes="message answer")
        self.state = state
        self._head = Static(classes="answer-head")
        self._parts: list[Widget] = []
        self._live = Static(classes="answer-live")
        self._foot = Static(classes="answer-foot")
        self._shown = False

    def compose(self) -> ComposeResult:
        yield self._head
        colours = palette(self.app)
        for part in self.state.parts:
            view = self._part_view(part, colours)
            self._parts.append(view)
            yield view
        yield self._live
        yield self._foot

    def on_mount(self) -> None:
        self._shown = True
        self.show_state()

    def show_state(self) -> None:
        """Bring the view up to its state: new parts mounted, new text appended, lines redrawn."""
        if not self._shown:
            return  # compose builds it from the state, then on_mount catches up
        colours = palette(self.app)
        for index, part in enumerate(self.state.parts):
            if index < len(self._parts):
                self._refresh_part(self._parts[index], part, colours)
            else:
                view = self._part_view(part, colours)
                self._parts.append(view)
                self.mount(view, before=self._live)
        self._head.update(head_text(self.state))
        self._live.update(Text(self.state.live, style="italic"))
        self._live.display = bool(self.state.live)
        foot = foot_text(self.state, colours)
        self._foot.update(foot)
        self._foot.display = bool(foot)

    @staticmethod
    def _part_view(part: Part, colours: dict[str, str]) -> Widget:
        if isinstance(part, TextPart):
            return AnswerMarkdown(part.text)
        return Static(
            part_text(part, colours), classes="answer-call" if isinstance(part, CallLine) else "answer-notice"
        )

    @staticmethod
    def _refresh_part(view: Widget, part: Part, colours: dict[str, str]) -> None:
        if isinstance(view, AnswerMarkdown) and isinstance(part, TextPart):
            view.feed(part.text[view.fed :])
        elif isinstance(view, Static) and not isinstance(part, TextPart):
            view.update(part_text(part, colours))

    @on(Markdown.LinkClicked)
    def _link(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        self.notify(f"Not opened: {one_line(event.href, 200)}", title="A link in the answer", markup=False)
