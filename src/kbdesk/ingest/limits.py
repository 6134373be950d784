"""How much work one document may cost outside the PDF reader's process: time and text.

The zip-based, RTF and e-mail readers are linear in their input and bounded by the
zip and XML limits (:mod:`.zip_parts`, :mod:`.xml_tree`); this is the last fence for
what those do not see — a sheet of a million cells, a mailbox of ten thousand
messages. Each reader calls :meth:`Budget.spend` as it produces text, so a document
with too much text stops as soon as it is over, not after it was all read.

Time is the *processor time* of the thread reading the document
(:func:`time.thread_time`), not the wall clock: on a machine busy with other work (or
a run whose other threads hold the interpreter) reading takes longer but costs the
same, so a good file never fails for the moment's load. Running out of it is still
tried again by the next add (:class:`ResourceLimit`); too much text is the file's own
("too large", remembered until the file changes).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from kbdesk.ingest.sections import ExtractionError, ResourceLimit

MAX_SECONDS = 60.0  # processor seconds; a 10 MB workbook of numbers takes ~10
MAX_TEXT_CHARS = 20_000_000  # as the PDF reader: more text than this from 10 MB is hostile or broken
MAX_NESTING = 3  # an attachment inside an attachment inside a message: deeper is not read


_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("kbdesk_extraction_deadline", default=None)


@contextmanager
def clock(budget: Budget) -> Iterator[None]:
    """While extracting one document: parsers deep inside (:mod:`.xml_tree`, RTF) can
    call :func:`check_time` without being handed the budget."""
    token = _DEADLINE.set((budget.deadline, budget.seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_time() -> None:
    """Raise :class:`ResourceLimit` when the document being extracted is out of time."""
    current = _DEADLINE.get()
    if current is not None and time.thread_time() > current[0]:
        raise ResourceLimit(_out_of_time("the document", current[1]))


def _out_of_time(what: str, seconds: float) -> str:
    return f"reading {what} took more than {seconds:g} s of processor time; the next add tries again"


class Budget:
    """Time and characters left for one document (and the files inside it)."""

    def __init__(self, seconds: float = MAX_SECONDS, chars: int = MAX_TEXT_CHARS, depth: int = 0) -> None:
        self.deadline = time.thread_time() + seconds  # in the thread that reads the document
        self.seconds = seconds
        self.chars = chars
        self.depth = depth
        self._calls = 0

    def spend(self, chars: int, what: str = "the document") -> None:
        """Count ``chars`` more characters of text; raises ExtractionError past a limit."""
        self.chars -= chars
        if self.chars < 0:
            raise ExtractionError(f"{what} is too large: more than {MAX_TEXT_CHARS:,} characters of text")
        self._calls += 1
        if self._calls & 63 == 0 and time.thread_time() > self.deadline:
            raise ResourceLimit(_out_of_time(what, self.seconds))

    def inner(self) -> Budget:
        """The budget of a file inside this one (an attachment): the same clock and characters."""
        sub = Budget.__new__(Budget)
        sub.deadline, sub.seconds, sub.chars, sub.depth, sub._calls = (
            self.deadline,
            self.seconds,
            self.chars,
            self.depth + 1,
            0,
        )
        return sub
