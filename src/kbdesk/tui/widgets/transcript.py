"""The conversation as it reads: questions, answers with their tool calls, notices and
sources. Everything the model or a document wrote is shown as plain :class:`Text`,
never markup, cleaned of control characters once more on the way in."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from kbdesk.chat.safety import clean, one_line
from kbdesk.tui.chat_state import AnswerState, Block, CallLine, NoticePart, TextPart, UserBlock
from kbdesk.tui.format import palette

EMPTY = ("Ask a question about your knowledge bases. The model searches them with kb_search, and each "
         "answer lists the passages it used: ctrl+s opens one. ctrl+o chooses the knowledge bases of this "
         "conversation.")

_MARKS = {"running": "⋯", "ok": "✓", "error": "✗", "stopped": "–"}


def source_label(source: dict[str, Any]) -> str:
    return one_line(source.get("label") or source.get("source") or "?", 120)


def answer_text(state: AnswerState, colours: dict[str, str]) -> Text:
    out = Text()
    out.append("assistant" + (f" · {one_line(state.model, 40)}" if state.model else ""), style="dim")
    previous: object = None
    for part in state.parts:
        if isinstance(part, TextPart):
            if not part.text.strip():
                continue
            out.append("\n\n" if isinstance(previous, TextPart) else "\n")
            out.append(clean(part.text))
        elif isinstance(part, CallLine):
            out.append("\n")
            style = {"ok": colours["ok"], "error": colours["bad"], "running": colours["busy"]}.get(part.state, "dim")
            out.append(f"{_MARKS.get(part.state, '·')} {part.label}", style=style)
            detail = part.error if part.state == "error" and part.error else part.summary
            if detail:
                out.append(f" — {one_line(detail, 200)}", style="dim")
        elif isinstance(part, NoticePart):
            out.append("\n")
            mark, style = {"error": ("✗", f"bold {colours['bad']}"), "warning": ("!", colours["busy"])}.get(
                part.level, ("i", colours["info"]))
            out.append(f"{mark} {one_line(part.text, 600)}", style=style)
        previous = part
    if state.streaming:
        out.append(" ▍" if previous is not None else "\nthinking…", style="dim")
    if state.sources:
        out.append("\nSources", style="bold")
        for source in state.sources:
            out.append(f"\n [{source.get('n', '?')}] ", style=colours["info"])
            out.append(source_label(source))
    return out


class UserView(Static):
    def __init__(self, block: UserBlock) -> None:
        text = Text()
        text.append("you", style="dim")
        text.append("\n" + clean(block.text))
        super().__init__(text, classes="message user")


class AnswerView(Static):
    def __init__(self, state: AnswerState) -> None:
        super().__init__(classes="message answer")
        self.state = state

    def on_mount(self) -> None:
        self.show_state()

    def show_state(self) -> None:
        self.update(answer_text(self.state, palette(self.app)))


class Transcript(VerticalScroll):
    """The blocks of one conversation; follows new text unless the user scrolled up."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.blocks: list[Block] = []

    def show(self, blocks: list[Block]) -> None:
        self.blocks = list(blocks)
        self.remove_children()
        if not blocks:
            self.mount(Static(Text(EMPTY), classes="transcript-empty"))
        else:
            self.mount_all([self._view(b) for b in blocks])
        self.anchor()

    def add(self, block: Block) -> Static:
        if not self.blocks:
            self.remove_children()
        self.blocks.append(block)
        view = self._view(block)
        self.mount(view)
        self.anchor()
        return view

    @staticmethod
    def _view(block: Block) -> Static:
        return UserView(block) if isinstance(block, UserBlock) else AnswerView(block)
