"""E-mail (.eml, one message; .mbox, many) → text per message, with the standard library's :mod:`email`.

**One document per file.** kbdesk knows a document by its file (one row per path:
change detection, ``--sync``, stale chunks and the stored copy all follow the file),
so a mailbox is one document and each message its own sections. A message's sections
carry its headers as metadata — ``{"headings": [subject], "subject", "from", "to",
"date"}`` — and its text starts with them, so a search result says which message it
is; an ``.eml`` file's headers are also its title, author and date.

The body: of ``multipart/alternative`` the plain text (else the HTML, read as HTML
is); every other part in order; forwarded messages (``message/rfc822``) as messages
of their own. Attachments in a format kbdesk reads are extracted as such (a Word file,
a PDF…) under the heading path ``[subject, file name]``, down to
:data:`~kbdesk.ingest.limits.MAX_NESTING` levels; others are skipped with a warning.
Charsets are those the parts declare (an unknown one is read as UTF-8/cp1252).
"""

from __future__ import annotations

import binascii
import contextlib
import email
import email.policy
import itertools
import quopri
import re
from collections.abc import Callable
from email.message import Message
from typing import Any

from kbdesk.ingest.html_text import extract_html
from kbdesk.ingest.limits import MAX_NESTING, Budget, check_time
from kbdesk.ingest.sections import ExtractionError, Section
from kbdesk.ingest.text_decode import decode_text

MAX_PARTS = 1000  # MIME parts of one message
MAX_MIME_DEPTH = 64  # multipart levels of one message (real mail nests a handful; a forward chain a few dozen)
_BOUNDARY_OR_CLOSE = re.compile(
    rb'boundary\s*=\s*(?:"([^"\r\n]{1,200})"|([^\s;"]{1,200}))|^--([^\r\n]{1,200}?)--[ \t]*\r?$',
    re.IGNORECASE | re.MULTILINE,
)
_MBOX_FROM = re.compile(rb"^From [^\r\n]*\r?\n", re.MULTILINE)
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)
Inner = Callable[[bytes, str, Budget], list[Section]]


def _header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # noqa: BLE001 - a malformed header costs that header
        value = None
    if value is None:
        return ""
    text = str(value)
    return " ".join(text.split())[:500]


def _part_text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        payload = str(part.get_payload() or "").encode("utf-8", "replace")
    charset = part.get_content_charset()
    return decode_text(payload, charset)


class _Reader:
    def __init__(self, inner: Inner | None, budget: Budget, warnings: list[str]) -> None:
        self.inner = inner
        self.budget = budget
        self.warnings = warnings
        self.parts = 0

    def message(self, msg: Message, headings: list[str], depth: int) -> list[Section]:
        fields = {key: _header(msg, key) for key in ("subject", "from", "to", "date")}
        subject = fields["subject"] or "(no subject)"
        path = [*headings, subject]
        head = "\n".join(f"{k.capitalize()}: {v}" for k, v in fields.items() if v)
        meta = {"headings": path, **{k: v for k, v in fields.items() if v}}
        body: list[str] = []
        attached: list[Section] = []
        self.body(msg, body, attached, path, depth)
        text = "\n\n".join([head, *[b for b in body if b.strip()]]).strip()
        self.budget.spend(len(text), "the message")
        sections = [Section(text, meta)] if text else []
        return sections + attached

    def body(self, part: Message, out: list[str], attached: list[Section], path: list[str], depth: int) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise ExtractionError(f"the message has more than {MAX_PARTS} MIME parts")
        ctype = part.get_content_type()
        filename = _filename(part)
        if part.is_multipart():
            children = [c for c in part.get_payload() if isinstance(c, Message)]
            if ctype == "message/rfc822":
                inner = _encoded_message(part, children)
                if inner is not None:  # a forwarded message sent base64-encoded (against the rules, but seen)
                    attached.extend(self.message(inner, path, depth + 1))
                    return
                for child in children:
                    attached.extend(self.message(child, path, depth + 1))
                return
            if ctype == "multipart/alternative" and children:
                best = next((c for c in children if c.get_content_type() == "text/plain"), None)
                best = best or next((c for c in children if c.get_content_type() == "text/html"), children[-1])
                children = [best]
            for child in children:
                self.body(child, out, attached, path, depth)
            return
        inline = not filename and part.get_content_disposition() != "attachment"
        if inline and ctype == "text/plain":
            out.append(_part_text(part).strip())
        elif inline and ctype == "text/html":
            with contextlib.suppress(ExtractionError):  # an HTML part with no visible text
                out.append("\n\n".join(s.text for s in extract_html(_part_text(part), title=False)))
        elif filename:
            self.attachment(part, filename, attached, path, depth)

    def attachment(self, part: Message, filename: str, attached: list[Section], path: list[str], depth: int) -> None:
        if self.inner is None or depth + 1 > MAX_NESTING:
            self.warnings.append(f"attachment {filename} was not read (attachments nested too deeply)")
            return
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes) or not payload:
            return
        try:
            sections = self.inner(payload, filename, self.budget.inner())
        except ExtractionError as exc:
            self.warnings.append(f"attachment {filename} was not read ({exc})")
            return
        for section in sections:
            meta = dict(section.metadata)
            meta["headings"] = [*path, filename, *meta.get("headings", [])]
            meta["attachment"] = filename
            attached.append(Section(section.text, meta))


def _encoded_message(part: Message, children: list[Message]) -> Message | None:
    """The message inside a ``message/rfc822`` part whose transfer encoding is base64 or
    quoted-printable (the parser reads such a part as a message made of encoded lines)."""
    encoding = str(part.get("content-transfer-encoding", "")).strip().lower()
    if encoding not in ("base64", "quoted-printable") or len(children) != 1:
        return None
    body = children[0].as_bytes().strip()
    try:
        raw = binascii.a2b_base64(body) if encoding == "base64" else quopri.decodestring(body)
    except (binascii.Error, ValueError):
        return None
    return _parse(raw) if raw.strip() else None


def _filename(part: Message) -> str:
    try:
        name = part.get_filename()
    except Exception:  # noqa: BLE001 - a malformed parameter: no name
        name = None
    return " ".join(str(name).split()) if name else ""


def _parse(data: bytes) -> Message:
    try:
        return email.message_from_bytes(data, policy=email.policy.default)
    except RecursionError:  # (nesting past what mime_depth saw, the parser recursing per level)
        raise ExtractionError("e-mail nests its parts too deeply to read") from None
    except Exception:  # noqa: BLE001 - the modern policy trips on some malformed headers
        return email.message_from_bytes(data, policy=email.policy.compat32)


def mime_depth(data: bytes) -> int:
    """How deep ``data`` nests multipart parts, from its boundaries alone (one pass, no
    parse): a boundary declared while another is still open is one level deeper; a
    closing delimiter ends its level and those opened inside it."""
    open_: list[bytes] = []
    deepest = 0
    for m in _BOUNDARY_OR_CLOSE.finditer(data):
        declared, closed = m.group(1) or m.group(2), m.group(3)
        if declared is not None:
            if declared not in open_:
                open_.append(declared)
                deepest = max(deepest, len(open_))
                if deepest > MAX_MIME_DEPTH:
                    break
        elif closed is not None and closed in open_:
            del open_[open_.index(closed) :]
    return deepest


def _read(data: bytes, reader: _Reader, headings: list[str]) -> list[Section]:
    if mime_depth(data) > MAX_MIME_DEPTH:  # the standard library's parser recurses once per level
        raise ExtractionError(f"e-mail nests MIME parts more than {MAX_MIME_DEPTH} levels deep; kbdesk reads no deeper")
    msg = _parse(data)
    try:
        return reader.message(msg, headings, reader.budget.depth)
    except ExtractionError:
        raise
    except Exception:  # noqa: BLE001 - the standard library's parser on a malformed message: read it raw
        return reader.message(email.message_from_bytes(data, policy=email.policy.compat32), headings, 0)


def extract_eml(data: bytes, budget: Budget, warnings: list[str], inner: Inner | None = None) -> list[Section]:
    reader = _Reader(inner, budget, warnings)
    sections = _read(data, reader, [])
    if not sections:
        raise ExtractionError("e-mail message has no text")
    first: dict[str, Any] = sections[0].metadata
    props = {
        k: v
        for k, v in (("title", first.get("subject")), ("author", first.get("from")), ("created", first.get("date")))
        if v
    }
    for section in sections:
        section.metadata = {**section.metadata, **props}
    return sections


def split_mbox(data: bytes) -> list[bytes]:
    """The messages of an mbox file (its "From " separator lines dropped, ">From " unescaped)."""
    starts = [m.start() for m in _MBOX_FROM.finditer(data)]
    if not starts or data[: starts[0]].strip():
        starts = [0, *starts]
    bounds = [*starts, len(data)]
    out = []
    for a, b in itertools.pairwise(bounds):
        chunk = data[a:b]
        chunk = _MBOX_FROM.sub(b"", chunk, count=1) if chunk.startswith(b"From ") else chunk
        if chunk.strip():
            out.append(_ESCAPED_FROM.sub(rb"\1", chunk))
    return out


def extract_mbox(data: bytes, budget: Budget, warnings: list[str], inner: Inner | None = None) -> list[Section]:
    messages = split_mbox(data)
    sections: list[Section] = []
    for number, raw in enumerate(messages, start=1):
        check_time()
        reader = _Reader(inner, budget, warnings)
        for section in _read(raw, reader, []):
            section.metadata = {**section.metadata, "message": number}
            sections.append(section)
    if not sections:
        raise ExtractionError("mailbox has no messages with text")
    return sections
