"""Images (PNG, JPEG, TIFF, WebP, GIF) → text through OCR (:mod:`.ocr`), one section per
page of a multi-page TIFF (metadata ``{"page": n}`` as for PDFs), each with the mean
confidence of its words (``ocr_confidence``, 0–100) in its metadata."""

from __future__ import annotations

from collections.abc import Callable

from kbdesk.ingest.ocr import OcrCancelled, OcrSetup, ocr_image, setup_for
from kbdesk.ingest.pdf_text import ExtractionCancelled
from kbdesk.ingest.sections import ExtractionError, Section
from kbdesk.ingest.text_decode import normalise_newlines


def extract_image(
    data: bytes,
    timeout: float,
    memory_mb: int,
    cancelled: Callable[[], bool] | None = None,
    ocr: OcrSetup | None = None,
) -> tuple[list[Section], list[str]]:
    """(sections, warnings); raises ExtractionError when the image holds no text (or
    Tesseract is missing: the reason says how to install it)."""
    setup = ocr if ocr is not None else setup_for()
    try:
        pages, errors = ocr_image(data, setup, timeout=timeout, memory_mb=memory_mb, cancelled=cancelled)
    except OcrCancelled as exc:
        raise ExtractionCancelled(str(exc)) from None
    several = len(pages) > 1 or any(p.page > 1 for p in pages)
    sections = []
    for page in pages:
        meta: dict = {"page": page.page} if several else {}
        if page.confidence is not None:
            meta["ocr_confidence"] = page.confidence
        sections.append(Section(normalise_newlines(page.text).strip(), meta))
    if not sections:
        raise ExtractionError("no text was found in the image (OCR)")
    return sections, errors
