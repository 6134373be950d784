"""File names as kbdesk stores and shows them.

A path on disk can hold anything but ``/`` and NUL: control characters, bytes that are
not UTF-8 (a latin-1 ``café.md`` from an old archive), thousands of characters. The
database needs text it can store and compare, and a person needs a name that cannot
drive the terminal. So every found file has

* a **source** — the key of its document (one row per source in a KB): its absolute
  path as text (bytes that are not UTF-8 written ``\\xNN``, and a backslash that would
  read as such an escape ``\\x5c``, so distinct names never share a key); on a team
  server, where others read a shared KB's rows, the same path as a chain of keyed hashes
  (:func:`hidden_source`: the same file is the same document, and the path is not
  shown); for an upload over HTTP, its name (:func:`upload_source`: a file is known
  by its name there);
* a **display name** — its path relative to the folder added, with those bytes and
  every control character shown as escapes (``\\t``, ``\\x1b``), so the name is one
  safe line.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePath

from kbdesk.textsafe import inert_line

_ESCAPED_BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")


def as_text(value: str) -> str:
    """``value`` with undecodable bytes (lone surrogates from the file system) as ``\\xNN``."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return os.fsencode(value).decode("utf-8", "backslashreplace")


_LOOKS_ESCAPED = re.compile(r"\\(?=x[0-9a-fA-F]{2})")


def source_key(path: Path) -> str:
    """The text a document of ``path`` is known by (its source path): the path itself
    when it is UTF-8, bytes that are not as ``\\xNN``. Distinct names give distinct keys:
    a backslash that would read as such an escape (a file really named ``caf\\xe9.md``)
    is itself written ``\\x5c``, so it never meets the Latin-1 ``café.md``."""
    text = str(path)
    if "\\x" in text:
        text = _LOOKS_ESCAPED.sub(r"\\x5c", text)
    return as_text(text)


MAX_NAME = 1000  # characters of a display name; longer ones keep their start and end


def display_name(name: str) -> str:
    """A file name as one safe line of text (a very long one shortened in the middle:
    the document is still known by its full path)."""
    shown = inert_line(as_text(name)) or "(no name)"
    if len(shown) > MAX_NAME:
        half = (MAX_NAME - 1) // 2
        shown = shown[:half] + "…" + shown[-half:]
    return shown


def path_of(source: str) -> Path:
    """The file a source path names (undoing :func:`source_key`'s ``\\xNN``)."""
    if "\\x" not in source:
        return Path(source)

    def byte(m: re.Match[str]) -> str:
        value = int(m.group(1), 16)
        return chr(0xDC00 + value) if value >= 0x80 else chr(value)

    return Path(_ESCAPED_BYTE.sub(byte, source))


UPLOAD = "upload:"
"""The source of a document that came by HTTP upload: ``upload:`` and its file name."""
HIDDEN = "kbdesk-path:"
"""The source of a document on a team server: its path as keyed hashes, one per folder."""
WEB = ("http://", "https://")
"""The sources of web pages: their URL (:mod:`kbdesk.web`)."""
HASH_CHARS = 10  # hex characters per path component (40 bits: distinct names under one folder never meet)


def upload_source(name: str) -> str:
    """The source of an upload named ``name`` (its document is known by that name)."""
    return UPLOAD + name


def hidden_source(path: str | os.PathLike[str], salt: str) -> str:
    """``path`` (absolute) as ``kbdesk-path:`` and one keyed hash per component: each
    hash covers the path up to that component and ``salt`` (the user's id), so the same
    file of the same user always has the same source, a folder's source is a prefix of
    its files' (``--sync`` finds what was under it), and the path itself is not kept."""
    # a file's path as its source key (distinct byte names stay distinct), a source as it is
    text = source_key(Path(path)) if isinstance(path, PurePath) else as_text(os.fspath(path))
    parts = PurePath(text).parts
    out, prefix = [], ""
    for part in parts:
        prefix = os.path.join(prefix, part) if prefix else part
        out.append(hashlib.sha256(f"{salt}\0{prefix}".encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS])
    return HIDDEN + ".".join(out)


def under(source: str, folder_source: str) -> bool:
    """Whether the hidden ``source`` is of a file under the folder of ``folder_source``."""
    return source.startswith(folder_source + ".")


def file_of(source: str | None) -> Path | None:
    """The file a source names on this machine, when it names one (an upload's name or
    a hidden path does not)."""
    if not source or source.startswith((UPLOAD, HIDDEN, *WEB)):
        return None
    return path_of(source)
