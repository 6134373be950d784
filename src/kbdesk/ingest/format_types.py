"""What one format declares (:class:`Format`) and what its reader is handed (:class:`Source`).

The table of formats is :mod:`.formats`; :mod:`.extract` dispatches from it, :mod:`.sniff`
checks the bytes against its sniffers. A reader is a function ``Source → sections``: the
bytes, the document's budget of time and text, its warnings, the limits of the child
process a PDF or an image is read in, and how a file inside it (an attachment, an
embedded document) is read. Text formats take their text through :meth:`Source.text`,
which refuses binary and empty files, counts the characters and remembers the legacy
encoding it was read in (the sections' ``encoding``), the same for every text format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbdesk.ingest.limits import Budget
from kbdesk.ingest.sections import ExtractionError, Section
from kbdesk.ingest.text_decode import decode_markup, decode_text_as, is_binary

if TYPE_CHECKING:
    from kbdesk.ingest.ocr import OcrSetup
    from kbdesk.ingest.sniff import Probe

__all__ = ["Attachment", "ChildLimits", "Format", "Reader", "Source", "on_markup", "on_text"]

Attachment = Callable[[bytes, str, Budget], list[Section]]  # (bytes, file name, budget) → its sections


@dataclass(frozen=True)
class ChildLimits:
    """The bounds of the child process a PDF or an image is read in (``own_process``)."""

    seconds: float = 30.0
    memory_mb: int = 512
    cancelled: Callable[[], bool] | None = None
    ocr: OcrSetup | None = None


@dataclass
class Source:
    """One file being read: what a format's reader is given."""

    data: bytes
    budget: Budget
    warnings: list[str]
    limits: ChildLimits = field(default_factory=ChildLimits)
    attachment: Attachment | None = None  # how a file inside this one is read
    readable: Callable[[str], bool] = lambda _name: False  # whether a name is in a format kbdesk reads
    encoding: str | None = None  # the legacy encoding :meth:`text` guessed (the sections' ``encoding``)

    def text(self, *, count: bool = True, keep_encoding: bool = True) -> str:
        """The file decoded as text (BOM, UTF-16, UTF-8, else a guessed legacy encoding),
        its characters counted against the budget unless ``count`` is false (a reader
        that counts what it keeps, as a notebook leaves its images' base64 out)."""
        self._refuse_binary()
        text, guessed = decode_text_as(self.data)
        if keep_encoding:
            self.encoding = guessed
        return self._counted(text, count)

    def markup(self) -> str:
        """The file decoded as markup: a declared charset (``<meta charset>``, an XML
        declaration) honoured; counted."""
        self._refuse_binary()
        return self._counted(decode_markup(self.data), True)

    def _refuse_binary(self) -> None:
        if is_binary(self.data):
            raise ExtractionError("binary file (not text)")

    def _counted(self, text: str, count: bool) -> str:
        if not text.strip():
            raise ExtractionError("file has no text (only whitespace)")
        if count:
            self.budget.spend(len(text))
        return text


Reader = Callable[[Source], list[Section]]


def on_text(reader: Callable[[str], list[Section]]) -> Reader:
    """A reader of decoded text (:meth:`Source.text`) as a format's reader."""
    return lambda source: reader(source.text())


def on_markup(reader: Callable[[str], list[Section]]) -> Reader:
    """A reader of markup (:meth:`Source.markup`: its declared charset honoured)."""
    return lambda source: reader(source.markup())


@dataclass(frozen=True)
class Format:
    """One format kbdesk reads, declared once in :data:`kbdesk.ingest.formats.FORMATS`.

    ``suffixes``: the file names it is read by (the first is its own: a web page of this
    type is named with it); ``read``: its reader; ``sniff``: a test of the bytes that
    makes a file of any name this format (tried in the table's order, :mod:`.sniff`);
    ``zip_based``: a zip package, so a zip no sniffer recognises still goes to its
    reader (which says what is wrong with it); ``reads_ole``: an OLE compound file under
    its name goes to its reader too (the Office readers say "password-protected" or
    "the older binary format"); ``ole_refusal``: what an OLE file under its name is
    told instead of the general refusal; ``own_process``: read in a child process of its
    own with the PDF reader's bounds (:class:`ChildLimits`), never in the ingestion
    helper's process nor on the budget's clock; ``attachment``: read when it is inside
    an e-mail or an Office file; ``media_types``: the Content-Types a web server names
    it by (a fetched page is read as this format); ``described``: how a refusal names
    it ("the file is a zip archive, not a PDF").
    """

    name: str
    content_type: str
    suffixes: tuple[str, ...]
    read: Reader
    sniff: Callable[[Probe], bool] | None = None
    zip_based: bool = False
    reads_ole: bool = False
    ole_refusal: str = ""
    own_process: bool = False
    attachment: bool = True
    media_types: tuple[str, ...] = ()
    described: str = ""

    @property
    def refusal_name(self) -> str:
        """How a refusal names the format the file's name promised."""
        if self.described:
            return self.described
        return "text" if self.content_type.startswith("text/") else "a document of its kind"
