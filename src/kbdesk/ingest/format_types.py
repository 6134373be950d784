"""What one format declares (:class:`Format`), what its reader is handed (:class:`Source`)
and what its content sniffer is handed (:class:`Probe`: the bytes, a zip's parts read once).

The table of formats is :mod:`.formats`; :mod:`.extract` dispatches from it, :mod:`.sniff`
checks the bytes against its sniffers. A reader is a function ``Source → sections``: the
bytes, the document's budget of time and text, its warnings, the limits of the child
process a PDF or an image is read in, and how a file inside it (an attachment, an
embedded document) is read. Text formats take their text through :meth:`Source.text`,
which refuses binary and empty files, counts the characters and remembers the legacy
encoding it was read in (the sections' ``encoding``), the same for every text format.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbdesk.ingest.limits import Budget
from kbdesk.ingest.sections import ExtractionError, Section
from kbdesk.ingest.text_decode import decode_markup, decode_text_as, is_binary

if TYPE_CHECKING:
    from kbdesk.ingest.ocr import OcrSetup

__all__ = ["ZIP", "Attachment", "ChildLimits", "Format", "Probe", "Reader", "Source", "on_markup", "on_text"]

ZIP = b"PK\x03\x04"

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


class Probe:
    """The bytes of one file, with what its sniffers ask of a zip read once."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._zip: tuple[frozenset[str], str] | None = None

    @property
    def zip_names(self) -> frozenset[str]:
        """The zip's part names, lower-cased (empty when it is no zip, or a damaged one)."""
        return self._zip_contents()[0]

    @property
    def zip_mimetype(self) -> str:
        """The text of the zip's ``mimetype`` part (OpenDocument, EPUB), or ''."""
        return self._zip_contents()[1]

    def _zip_contents(self) -> tuple[frozenset[str], str]:
        if self._zip is None:
            self._zip = _zip_contents(self.data) if self.data.startswith(ZIP) else (frozenset(), "")
        return self._zip


def _zip_contents(data: bytes) -> tuple[frozenset[str], str]:
    """A zip's part names (lower-cased) and its ``mimetype`` text; nothing when it is a
    damaged or odd zip (left to the reader the name picks)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            listed = archive.namelist()[:50_000]
            names = frozenset(name.lower() for name in listed)
            mimetype = b""
            if "mimetype" in names:
                info = archive.getinfo(next(n for n in listed if n.lower() == "mimetype"))
                if info.file_size <= 200 and info.compress_size <= 1024:
                    mimetype = archive.read(info)
    except Exception:  # noqa: BLE001 - a damaged or odd zip: left to the reader the name picks
        return frozenset(), ""
    return names, mimetype.decode("ascii", "replace").strip()


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
