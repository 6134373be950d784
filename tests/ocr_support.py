"""Images of text for the OCR tests, made here (Pillow renders the text; a scanned PDF
is written by hand, as :mod:`pdf_builders` does): small, and no fixture files."""

from __future__ import annotations

import io
import shutil
import zlib

import pytest
from PIL import Image, ImageDraw, ImageFont

from pdf_builders import make_pdf

TESSERACT = shutil.which("tesseract")
needs_tesseract = pytest.mark.skipif(
    TESSERACT is None, reason="Tesseract is not installed (CI installs tesseract-ocr: .ci/run)"
)


def text_image(lines: list[str], *, size: int = 32, width: int = 1100, mode: str = "L") -> Image.Image:
    """Black text on white, ``size`` px letters (about 12 pt at 200 dpi)."""
    font = ImageFont.load_default(size=size)
    img = Image.new(mode, (width, 60 + len(lines) * int(size * 1.8)), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((40, 30 + i * int(size * 1.8)), line, fill="black", font=font)
    return img


def encoded(img: Image.Image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **options)
    return buf.getvalue()


def photo(lines: list[str]) -> bytes:
    """A JPEG 'photo' of a page: colour, an off-white paper tint, a slight tilt."""
    img = text_image(lines, size=34).convert("RGB")
    tinted = Image.blend(img, Image.new("RGB", img.size, (235, 225, 200)), 0.25)
    return encoded(tinted.rotate(1.0, expand=True, fillcolor=(235, 225, 200)), "JPEG", quality=85)


def _image_xobject(img: Image.Image, how: str) -> bytes:
    if how == "jpeg":  # a scanner's usual output: DCTDecode
        data = encoded(img.convert("L"), "JPEG", quality=80)
        filters = b"/DCTDecode"
    else:  # raw gray samples, FlateDecode
        data = zlib.compress(img.convert("L").tobytes())
        filters = b"/FlateDecode"
    return b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray" % img.size + (
        b" /BitsPerComponent 8 /Filter %s /Length %d >>\nstream\n%s\nendstream" % (filters, len(data), data)
    )


def scanned_pdf(pages: list[list[str]]) -> bytes:
    """A PDF whose pages are images only (no text layer): page 1 a JPEG, the others raw
    pixels; each image drawn over the whole page."""
    images = [_image_xobject(text_image(lines), "jpeg" if i == 0 else "flate") for i, lines in enumerate(pages)]
    # make_pdf shares one object (3) between pages: give each page its own image by
    # building the PDF with every image as a shared resource, each page drawing its own
    contents = [
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draw), draw)
        for draw in (b"q 612 0 0 792 0 0 cm /Im%d Do Q" % i for i in range(len(pages)))
    ]
    return _pdf_with_images(images, contents)


def _pdf_with_images(images: list[bytes], contents: list[bytes]) -> bytes:
    n = len(contents)
    first_image = 4 + 2 * n  # make_pdf: catalog, pages, shared, then a page and its content each
    names = b" ".join(b"/Im%d %d 0 R" % (i, first_image + i) for i in range(len(images)))
    resources = b"<< /XObject << %s >> >>" % names
    pdf = make_pdf(contents, shared=b"<< >>", resources=resources)
    # append the image objects after those make_pdf wrote, and a fresh xref
    body = pdf[: pdf.rindex(b"\nxref\n") + 1]
    out = io.BytesIO()
    out.write(body)
    offsets = []
    for i, image in enumerate(images):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (first_image + i, image))
    return _rewrite_xref(out.getvalue(), first_image + len(images) - 1)


def _rewrite_xref(body: bytes, count: int) -> bytes:
    """An xref table for objects 1..count, found by scanning for ``N 0 obj``."""
    import re

    offsets = {int(m[1]): m.start() for m in re.finditer(rb"(?m)^(\d+) 0 obj\n", body)}
    out = io.BytesIO()
    out.write(body)
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (count + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offsets[i] for i in range(1, count + 1)))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (count + 1, xref))
    return out.getvalue()


def pdf_with_image(header: bytes, data: bytes) -> bytes:
    """A one-page PDF drawing one image XObject: ``header`` the entries of its dictionary
    besides /Type, /Subtype and /Length (e.g. b"/Width 2 /Height 2 /ColorSpace ...")."""
    image = b"<< /Type /XObject /Subtype /Image %s /Length %d >>\nstream\n%s\nendstream" % (header, len(data), data)
    draw = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
    return _pdf_with_images([image], [b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draw), draw)])
