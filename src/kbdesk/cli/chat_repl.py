"""The interactive ``kbdesk chat``: a prompt, streamed answers, slash commands.

Each question is a turn of :mod:`kbdesk.cli.chat_turn` (a worker thread; Ctrl-C stops
the answer and comes back to the prompt). Lines are read with ``input()`` — with the
stdlib ``readline`` where it exists, for editing and a history of typed lines — or,
when stdin is not a terminal, one question per line until the end of input.

The conversation is created when it is first needed (a question, ``/kbs`` …) and
removed at the end if it is still empty, so opening the chat and leaving saves nothing.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdesk.chat import chat_target
from kbdesk.cli.chat_turn import RETRIEVAL_POLICIES, TurnView, require_chat_model, run_turn
from kbdesk.cli.conversations import print_messages, print_source, toggle_lines
from kbdesk.cli.output import plain, stderr, stdout
from kbdesk.errors import InvalidInputError, KbdeskError
from kbdesk.filters import Filters
from kbdesk.filters_text import parse_line

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

PROMPT = "> "
MORE = "... "
HISTORY_LINES = 1000
_COMMAND = re.compile(r"[A-Za-z]+")

HELP = [
    ("/kbs", "list the conversation's KBs, numbered"),
    ("/kbs +KB -KB", "switch KBs on (+) or off (-), by name or number; a bare KB flips it"),
    ("/persona [NAME|none]", "show or change the persona (its prompt, model and KBs)"),
    ("/project [NAME|none]", "show or change the project (its KBs apply)"),
    ("/retrieval [auto|tool|always|off|default]", "show or set how the KBs are consulted"),
    ("/filter [LINE|none]", "show or set the filters every search keeps to (tag:q3 path:work/** type:md)"),
    ("/new", "start a new conversation"),
    ("/history", "print this conversation so far"),
    ("/sources [N]", "the sources of the last answer; N prints that passage"),
    ("/help", "this list"),
    ("/exit", "leave (also Ctrl-D, 'exit' or 'quit')"),
    ("!multi … !end", "type several lines; a line ending in \\ continues too"),
    ("//text", "ask a question that starts with /"),
]


class ChatSession:
    """One ``kbdesk chat`` run. :meth:`run` returns the exit status."""

    def __init__(
        self,
        chat: ChatService,
        conversation: str | None,
        *,
        persona: str | None = None,
        project: str | None = None,
        kbs: list[str] | None = None,
        model: str | None = None,
        provider: str | None = None,
        retrieval: str | None = None,
        max_tokens: int | None = None,
        max_rounds: int = 5,
        filters: Filters | None = None,
        interactive: bool = False,
        history_file: Path | None = None,
        stdin: Any = None,
    ) -> None:
        self.chat = chat
        self.conversation = conversation
        self.created: str | None = None  # the conversation this session created (removed if left empty)
        self.persona, self.project, self.kbs = persona, project, list(kbs or [])
        self.model, self.provider, self.max_rounds = model, provider, max_rounds
        self.retrieval, self.max_tokens = retrieval, max_tokens
        self.filters = filters or None  # from the command line: set on the conversation
        self.interactive = interactive
        self.history_file = history_file
        self.stdin = stdin or sys.stdin
        self.readline: Any = None
        self.failed = False
        self.commands: dict[str, Callable[[str], bool]] = {
            "kbs": self.cmd_kbs,
            "persona": self.cmd_persona,
            "project": self.cmd_project,
            "retrieval": self.cmd_retrieval,
            "filter": self.cmd_filter,
            "filters": self.cmd_filter,
            "new": self.cmd_new,
            "history": self.cmd_history,
            "sources": self.cmd_sources,
            "help": self.cmd_help,
            "exit": self.cmd_exit,
            "quit": self.cmd_exit,
        }

    # ── the loop ───────────────────────────────────────────────────────────────
    def run(self) -> int:
        self.err = stderr()
        self.out = stdout()
        if self.conversation is not None:
            self._adopt(self.conversation)
        if self.interactive:
            self._open_history()
            self._banner()
        interrupted = False
        try:
            while True:
                try:
                    if interrupted:  # here, not in the except clause: another Ctrl-C there would escape
                        interrupted = False
                        self._newline()
                    if not self.handle(self.read()):
                        break
                except KeyboardInterrupt:  # at the prompt: the line is dropped; elsewhere: back to it
                    interrupted = True
                except EOFError:  # Ctrl-D, or the end of piped input
                    self._newline()
                    break
                except KbdeskError as exc:
                    self.error(str(exc))
        finally:
            self._close()
        return 1 if self.failed and not self.interactive else 0

    def read(self) -> str:
        """One question or command: several lines with ``!multi`` … ``!end`` or trailing ``\\``."""
        line = self._line(PROMPT)
        if line.strip() == "!multi":
            lines = []
            while (more := self._line(MORE)).strip() != "!end":
                lines.append(more)
            return "\n".join(lines)
        parts = []
        while line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            line = self._line(MORE)
        return "\n".join([*parts, line])

    def _line(self, prompt: str) -> str:
        if self.interactive:
            return input(prompt)
        line = self.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    def handle(self, text: str) -> bool:
        """Run one input; False ends the session."""
        stripped = text.strip()
        if not stripped:
            return True
        if stripped in ("exit", "quit"):
            return False
        if stripped.startswith("//"):
            return self.ask(stripped[1:])
        if stripped.startswith("/"):
            name, _, rest = stripped[1:].partition(" ")
            command = self.commands.get(name.lower())
            if command is not None:
                return command(rest.strip())
            if _COMMAND.fullmatch(name):
                self.error(f"no command /{name}: /help lists them (start with // to ask something that begins with /)")
                return True
        return self.ask(text)

    def ask(self, question: str) -> bool:
        conv = self._ensure()
        require_chat_model(self.chat, model=self.model, conversation=conv)
        view = TurnView()
        kwargs: dict[str, Any] = {"model": self.model, "provider": self.provider, "max_rounds": self.max_rounds}
        if self.retrieval is not None:
            kwargs["retrieval"] = self.retrieval
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        answer = run_turn(self.chat, conv, question, view, on_interrupt=view.stopping, **kwargs)
        if answer.status == "error":
            self.failed = True
        self.out.print()
        return True

    # ── slash commands ─────────────────────────────────────────────────────────
    def cmd_kbs(self, args: str) -> bool:
        conv = self._ensure()
        toggles = self.chat.kb_toggles(conv)
        for token in _split(args):
            sign, ref = (token[0], token[1:]) if token[0] in "+-" and len(token) > 1 else ("", token)
            row = (
                toggles[int(ref) - 1]
                if ref.isdigit() and 1 <= int(ref) <= len(toggles)
                else next((t for t in toggles if t.name.casefold() == ref.casefold()), None)
            )
            enabled = sign == "+" if sign else not (row.enabled if row else False)
            self.chat.set_kb_enabled(conv, row.kb_id if row else ref, enabled)
            toggles = self.chat.kb_toggles(conv)
        if not toggles:
            self.out.print(plain("No knowledge bases yet: create one with 'kbdesk kb create NAME'."))
        for line in toggle_lines(toggles, numbered=True):
            self.out.print(plain(line))
        if toggles and not args:
            self.note("/kbs +NAME -NAME (or numbers) switches them")
        return True

    def cmd_persona(self, args: str) -> bool:
        if not args:
            current = self._current("persona_id", self.chat.persona, self.persona)
            names = ", ".join(p.name for p in self.chat.personas()) or "none yet ('kbdesk persona create')"
            self.out.print(plain(f"persona: {current or 'none'}  (personas: {names})"))
            return True
        name = None if args.lower() == "none" else self.chat.persona(args).name
        self.persona = name
        if self.conversation is not None:
            self.chat.set_persona(self.conversation, name)
        self.note(f"persona: {name or 'none'}{self._model_note()}")
        return True

    def cmd_project(self, args: str) -> bool:
        if not args:
            current = self._current("project_id", self.chat.project, self.project)
            names = ", ".join(p.name for p in self.chat.projects()) or "none yet ('kbdesk project create')"
            self.out.print(plain(f"project: {current or 'none'}  (projects: {names})"))
            return True
        name = None if args.lower() == "none" else self.chat.project(args).name
        self.project = name
        if self.conversation is not None:
            self.chat.set_project(self.conversation, name)
        self.note(f"project: {name or 'none'}")
        return True

    def cmd_retrieval(self, args: str) -> bool:
        if args:
            if args not in (*RETRIEVAL_POLICIES, "default"):
                raise InvalidInputError(f"retrieval is one of {', '.join(RETRIEVAL_POLICIES)} or default")
            self.chat.set_retrieval(self._ensure(), None if args == "default" else args)
            self.retrieval = None  # the conversation's policy now applies
        policy, origin = self._retrieval()
        self.out.print(plain(f"retrieval: {policy} ({origin})"))
        return True

    def cmd_filter(self, args: str) -> bool:
        """``/filter`` shows the filters, ``/filter none`` removes the conversation's own,
        ``/filter tag:q3 path:work/**`` sets them."""
        args = args.strip()
        if args:
            filters = None if args.lower() in ("none", "off", "clear") else parse_line(args)
            self.chat.set_filters(self._ensure(), filters)
            self.filters = None
        self.out.print(plain(f"filters: {self._filters_line()}"))
        return True

    def _filters_line(self) -> str:
        if self.conversation is None:
            if self.filters:
                return self.filters.describe()
            shown = self.chat.context(persona=self.persona, project=self.project).filters
        else:
            shown = self.chat.filters(self.conversation)
        return shown.describe() if shown else "none (every document)"

    def cmd_new(self, args: str) -> bool:
        self._drop_if_empty()
        self.conversation = None
        self.note("a new conversation")
        return True

    def cmd_history(self, args: str) -> bool:
        if self.conversation is None or not self.chat.messages(self.conversation):
            self.note("nothing asked yet in this conversation")
            return True
        print_messages(self.chat, self.conversation)
        return True

    def cmd_sources(self, args: str) -> bool:
        answers = (
            [m for m in self.chat.messages(self.conversation) if m.role == "assistant" and m.sources]
            if self.conversation
            else []
        )
        if not answers:
            self.note("no answer with sources yet")
        elif args:
            if not args.isdigit():
                raise InvalidInputError("/sources N takes a source number")
            assert self.conversation is not None  # there are answers
            print_source(self.chat, self.conversation, int(args))
        else:
            for s in answers[-1].sources:
                self.out.print(plain(f"[{s.get('n')}] {s.get('label', '')}"))
            self.note("/sources N prints the passage")
        return True

    def cmd_help(self, args: str) -> bool:
        width = max(len(c) for c, _ in HELP)
        for command, what in HELP:
            self.out.print(plain(f"{command:<{width}}  {what}"))
        self.out.print(plain("Ctrl-C stops an answer (what came is kept) or clears the line."))
        return True

    def cmd_exit(self, args: str) -> bool:
        return False

    # ── helpers ────────────────────────────────────────────────────────────────
    def _ensure(self) -> str:
        """The conversation, created now with the session's persona, project and KBs."""
        if self.conversation is None:
            conv = self.chat.new_conversation(persona=self.persona, project=self.project)
            self.conversation = self.created = conv.id
            if self.kbs:
                self.chat.set_kbs(conv.id, self.kbs)
            if self.filters:
                self.chat.set_filters(conv.id, self.filters)
        return self.conversation

    def _adopt(self, ref: str) -> None:
        """Chat in an existing conversation: the options given on the command line apply to it."""
        conv = self.chat.conversation(ref)
        if self.persona is not None:
            self.chat.set_persona(conv.id, self.persona)
        if self.project is not None:
            self.chat.set_project(conv.id, self.project)
        if self.kbs:
            self.chat.set_kbs(conv.id, self.kbs)
        if self.filters:
            self.chat.set_filters(conv.id, self.filters)
        conv = self.chat.conversation(conv.id)
        self.persona = self.chat.persona(conv.persona_id).name if conv.persona_id else None
        self.project = self.chat.project(conv.project_id).name if conv.project_id else None

    def _drop_if_empty(self) -> None:
        if self.created is None:
            return
        try:
            if self.chat.conversation(self.created).message_count == 0:
                self.chat.delete(self.created)
        except KbdeskError:  # removed meanwhile
            pass
        self.created = None

    def _close(self) -> None:
        self._drop_if_empty()
        if self.readline is not None and self.history_file is not None:
            try:
                self.history_file.parent.mkdir(parents=True, exist_ok=True)
                self.readline.write_history_file(str(self.history_file))
            except OSError:
                pass

    def _current(self, field: str, find: Callable[[str], Any], fallback: str | None) -> str | None:
        if self.conversation is None:
            return fallback
        ref = getattr(self.chat.conversation(self.conversation), field)
        return find(ref).name if ref else None

    def _retrieval(self) -> tuple[str, str]:
        if self.retrieval:
            return self.retrieval, "for this session, from --retrieval"
        conv = self.chat.conversation(self._ensure())
        where = "set on this conversation" if conv.retrieval else "the persona's, else [chat] retrieval"
        return self.chat.retrieval_policy(conv.id), where

    def _model_note(self) -> str:
        try:
            persona = self.chat.persona(self.persona) if self.persona else None
            target = chat_target(self.chat.desk.config, persona, model=self.model, provider=self.provider)
        except KbdeskError:
            return ""
        return f" — model {target.model} via {target.provider}"

    def _banner(self) -> None:
        if self.conversation is not None:
            conv = self.chat.conversation(self.conversation)
            where = f"Continuing '{conv.title or conv.id[:8]}' ({conv.message_count} messages; /history shows them)"
        else:
            where = "A new conversation"
        self.note(f"{where}{self._model_note()}.")
        line = self._filters_line()
        if not line.startswith("none"):
            self.note(f"Searches keep to: {line} (/filter changes it).")
        self.note("/help lists the commands; /exit or Ctrl-D leaves; Ctrl-C stops an answer.")

    def _open_history(self) -> None:
        try:
            import readline
        except ImportError:  # not on every platform: plain input() then
            return
        self.readline = readline
        readline.set_history_length(HISTORY_LINES)
        if self.history_file is not None:
            with contextlib.suppress(OSError):
                readline.read_history_file(str(self.history_file))

    def note(self, text: str) -> None:
        self.err.print(plain(text, style="dim"))

    def error(self, text: str) -> None:
        self.failed = True
        self.err.print(plain(f"error: {text}", style="red"))

    def _newline(self) -> None:
        if self.interactive:
            self.err.print()


def _split(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError as exc:  # an unclosed quote
        raise InvalidInputError(f"cannot read {args!r}: {exc}") from None
