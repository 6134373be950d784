"""The parts of a zip-based document (Word, PowerPoint, Excel, OpenDocument, EPUB), read within limits.

A 10 MB zip can inflate to gigabytes (a zip bomb) or hold a million entries, and its
directory can lie about sizes. So before a part is parsed:

- the archive may hold at most :data:`MAX_ENTRIES` entries;
- a part is read through a stream that stops at :data:`MAX_PART_BYTES`, whatever the
  directory says, and all parts read together stop at :data:`MAX_TOTAL_BYTES`;
- a part whose compression ratio is over :data:`MAX_RATIO` (real documents stay under
  ~30; a bomb is in the thousands) is refused before it is inflated;
- encrypted entries (an Office file saved with a password is not a zip at all: it is
  an OLE container, told apart by its signature) are refused with that reason;
- a zip whose directory is missing (a download cut short) is read from its parts' own
  headers, in order, as far as they go (:func:`_salvage`), within the same budgets.

Every problem is an :class:`~kbdesk.ingest.sections.ExtractionError` with one line for
a person.
"""

from __future__ import annotations

import io
import itertools
import struct
import zipfile
import zlib
from collections.abc import Iterator

from kbdesk.ingest.limits import check_time
from kbdesk.ingest.sections import ExtractionError

MAX_ENTRIES = 20_000  # the largest real workbook seen held ~3,000 parts
MAX_PART_BYTES = 256 * 1024 * 1024  # one sheet of a large workbook inflates to ~100 MB
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_RATIO = 200  # XML compresses 5-30x; an all-zeros bomb compresses ~1000x
RATIO_FLOOR = 1024 * 1024  # parts inflating to less than this are never refused for their ratio
PIECE_BYTES = 1 << 20  # a part is inflated and parsed this much at a time
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy .doc/.xls/.ppt, and password-protected OOXML


class ZipParts:
    """The named parts of one zip-based document, each read at most once within the limits."""

    def __init__(self, data: bytes, kind: str) -> None:
        self.kind = kind
        if data.startswith(OLE_SIGNATURE):
            raise ExtractionError(
                f"{kind} is password-protected or in the older binary format (not a zip package); kbdesk cannot read it"
            )
        self.salvaged: dict[str, bytes] | None = None  # parts read from a zip without its directory
        self.read_total = 0
        self.data = data
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except NotImplementedError as exc:  # a zip version or feature Python's zipfile does not read
            raise ExtractionError(f"{kind} uses a zip feature kbdesk cannot read ({exc})") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            self.salvaged = _salvage(data, kind)  # a download cut short: its directory is missing
            if not self.salvaged:
                raise ExtractionError(f"{kind} is damaged (not a readable zip package: {exc})") from None
            infos = []
        if len(infos) > MAX_ENTRIES:
            raise ExtractionError(f"{kind} has {len(infos):,} parts, over the limit of {MAX_ENTRIES:,}")
        self.infos = {info.filename: info for info in infos}
        names = list(self.infos) or list(self.salvaged or {})
        self._lower = {name.lower(): name for name in names}

    def names(self) -> list[str]:
        return list(self.infos) if self.salvaged is None else list(self.salvaged)

    def find(self, name: str) -> str | None:
        """The part named ``name`` (a leading "/" and letter case ignored), or None."""
        name = name.lstrip("/")
        if name in self.infos or (self.salvaged is not None and name in self.salvaged):
            return name
        return self._lower.get(name.lower())

    def read(self, name: str, *, required: bool = False) -> bytes | None:
        """The bytes of part ``name``; None when it is missing (an error when ``required``)."""
        pieces = self.pieces(name, required=required)
        return None if pieces is None else b"".join(pieces)

    def pieces(self, name: str, *, required: bool = False) -> Iterator[bytes] | None:
        """Part ``name`` in pieces of :data:`PIECE_BYTES` as it is inflated (a parser
        fed these never holds the whole part); None when it is missing or empty (an
        error when ``required`` and missing). The limits are checked as the pieces come."""
        found = self.find(name)
        if found is None:
            if required:
                raise ExtractionError(f"{self.kind} is damaged (it has no {name})")
            return None
        if self.salvaged is not None:
            salvaged = self.salvaged[found]
            if not salvaged:
                return None if not required else iter([b""])
            return iter([salvaged[i : i + PIECE_BYTES] for i in range(0, len(salvaged), PIECE_BYTES)])
        info = self.infos[found]
        if info.flag_bits & 0x1:
            raise ExtractionError(f"{self.kind} is encrypted; kbdesk cannot read it")
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ExtractionError(
                f"{self.kind} looks like a zip bomb ({found} inflates {info.file_size // max(info.compress_size, 1):,}"
                f" times its size)"
            )
        inflated = self._inflated(found, info)
        first = next(inflated, b"")
        if not first:  # an empty part, as read() would give b""
            return None if not required else iter([b""])
        return itertools.chain([first], inflated)

    def _inflated(self, found: str, info: zipfile.ZipInfo) -> Iterator[bytes]:
        budget = min(MAX_PART_BYTES, MAX_TOTAL_BYTES - self.read_total)
        size = 0
        try:
            with self.zip.open(info) as stream:
                while True:
                    piece = stream.read(min(PIECE_BYTES, budget - size + 1))  # never past the budget
                    if not piece:
                        break
                    size += len(piece)
                    self.read_total += len(piece)
                    if size > budget:
                        raise ExtractionError(
                            f"{self.kind} inflates past the safety limit ({found} alone is over the budget)"
                        )
                    yield piece
        except ExtractionError:
            raise
        except zipfile.BadZipFile as exc:  # a bad checksum (found at the end): the part's own bytes may still read
            salvaged = _salvage(self.data, self.kind).get(found)
            if not salvaged or len(salvaged) < size:
                raise ExtractionError(f"{self.kind} is damaged ({found} cannot be read: {exc})") from None
            yield salvaged[size:]  # the rest, from the part's own header
        except (OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise ExtractionError(f"{self.kind} is damaged ({found} cannot be read: {exc})") from None
        except Exception as exc:  # noqa: BLE001 - zlib/bz2/lzma raise their own error types
            raise ExtractionError(f"{self.kind} is damaged ({found} cannot be read: {exc})") from None


_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # a local file header, from its signature to the extra field's length


def _salvage(data: bytes, kind: str) -> dict[str, bytes]:
    """The parts of a zip whose central directory is missing or broken, read from their
    local headers in order (stored or deflated), within the same budgets; a part cut short
    keeps what could be inflated. Empty when nothing could be read."""
    parts: dict[str, bytes] = {}
    total, pos = 0, data.find(b"PK\x03\x04")
    while pos >= 0 and pos + _LOCAL.size <= len(data) and len(parts) < MAX_ENTRIES:
        check_time()
        _sig, _version, flags, method, _t, _d, _crc, csize, _usize, nlen, xlen = _LOCAL.unpack_from(data, pos)
        start = pos + _LOCAL.size + nlen + xlen
        name = data[pos + _LOCAL.size : pos + _LOCAL.size + nlen].decode(
            "utf-8" if flags & 0x800 else "cp437", "replace"
        )
        if flags & 0x1 or method not in (0, 8):
            break  # encrypted, or a compression this reader does not do
        budget = min(MAX_PART_BYTES, MAX_TOTAL_BYTES - total)
        if method == 0:
            body = data[start : start + csize] if csize else b""
            end = start + len(body)
        else:
            body, end = _inflate(data, start, start + csize if csize and not flags & 0x8 else len(data), budget, kind)
        if name and not name.endswith("/"):
            parts[name] = body
            total += len(body)
        pos = data.find(b"PK\x03\x04", max(end, start))
    return parts


def _inflate(data: bytes, start: int, stop: int, budget: int, kind: str) -> tuple[bytes, int]:
    """A raw deflate stream from ``data[start:stop]`` in 64 KB steps, refused as a bomb as
    soon as it inflates past :data:`MAX_RATIO` times what it read; (bytes, where it ended)."""
    inflate = zlib.decompressobj(-15)
    out: list[bytes] = []
    size, pos, stop = 0, start, min(stop, len(data))  # a header may claim more than the file still holds
    try:
        while pos < stop and not inflate.eof:
            check_time()
            piece = data[pos : min(pos + 65536, stop)]
            pos += len(piece)
            chunk = inflate.decompress(piece, budget - size + 1)
            out.append(chunk)
            size += len(chunk)
            if size > budget:
                raise ExtractionError(f"{kind} inflates past the safety limit")
            if size > RATIO_FLOOR and size > MAX_RATIO * (pos - start):
                raise ExtractionError(f"{kind} looks like a zip bomb (a part inflates over {MAX_RATIO} times its size)")
    except zlib.error:
        pass  # cut short: what was inflated is kept
    end = pos - len(inflate.unused_data) if inflate.eof else pos
    return b"".join(out), end
