"""A tiny PDF writer for tests: pypdf cannot write text, so PDFs are built by hand."""

from __future__ import annotations

import io
import zlib

import pypdf

FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
IMAGE = (
    b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray"
    b" /BitsPerComponent 8 /Length 1 >>\nstream\n\x80\nendstream"
)


def _stream(data: bytes, deflate: int = 0) -> bytes:
    for _ in range(deflate):
        data = zlib.compress(data)
    filters = b" /Filter [" + b" /FlateDecode" * deflate + b" ]" if deflate else b""
    return b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(data), filters, data)


def make_pdf(
    contents: list[bytes], *, shared: bytes = FONT, resources: bytes = b"<< /Font << /F1 3 0 R >> >>"
) -> bytes:
    """Objects: 1 catalog, 2 page tree, 3 ``shared`` (font or image), then page/content pairs.

    ``contents`` items are complete stream objects (see ``_stream``)."""
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(len(contents)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(contents)),
        shared,
    ]
    for i, content in enumerate(contents):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s"
            b" /Contents %d 0 R >>" % (resources, 5 + 2 * i)
        )
        objects.append(content)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def text_page(text: str, deflate: int = 0) -> bytes:
    return _stream(b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % text.encode("ascii"), deflate)


def bomb_page() -> bytes:
    """A content stream of ~600 bytes that inflates to 200 MB (FlateDecode twice)."""
    deflater = zlib.compressobj(9)
    megabyte = b" " * (1 << 20)
    inner = b"".join(deflater.compress(megabyte) for _ in range(200)) + deflater.flush()
    data = zlib.compress(inner, 9)
    return b"<< /Length %d /Filter [/FlateDecode /FlateDecode] >>\nstream\n%s\nendstream" % (len(data), data)


def encrypt(pdf: bytes, user_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def lines_page(lines: list[str], deflate: int = 0) -> bytes:
    """A page of several lines of text (ASCII; parentheses and backslashes escaped)."""
    body = b"".join(
        b"(%s) Tj T* " % line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("ascii")
        for line in lines
    )
    return _stream(b"BT /F1 11 Tf 14 TL 72 720 Td " + body + b"ET", deflate)
