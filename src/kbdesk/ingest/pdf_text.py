"""PDF → one section per page with text, metadata ``{"page": n}`` (1-based).

The parsing itself happens in a child process (:mod:`kbdesk.ingest.pdf_worker`). Pages
that raised there are reported as warnings when other pages could be read; when no
page has text the document fails. A cancelled extraction (the ingestion was cancelled,
or :func:`kbdesk.ingest.pdf_worker.kill_pdf_workers` ran) raises
:class:`ExtractionCancelled`: the document did not fail, it waits for the next run.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kbdesk.errors import KbdeskError
from kbdesk.ingest import ocr as ocr_mod
from kbdesk.ingest.pdf_worker import PdfWorkerCancelled, PdfWorkerError, PdfWorkerTimeout, run_pdf_worker
from kbdesk.ingest.sections import ExtractionError, ResourceLimit, Section
from kbdesk.ingest.text_decode import normalise_newlines

MAX_PAGE_WARNINGS = 10  # a 900-page PDF with 800 broken pages gets a summary, not 800 lines

_PAGE_ERROR = re.compile(r"page (\d+): (.*)", re.DOTALL)  # pdf_worker's "page 3: reason"


class ExtractionCancelled(KbdeskError):
    """Extraction stopped because the ingestion was cancelled; not a failure of the
    document (leave it pending for the next ``add`` or ``resume``)."""


def page_warnings(errors: list[str]) -> list[str]:
    """The worker's per-page errors as warnings: "page 3 could not be read: reason"."""
    warnings = []
    for error in errors[:MAX_PAGE_WARNINGS]:
        match = _PAGE_ERROR.fullmatch(error)
        warnings.append(
            f"page {match[1]} could not be read: {match[2]}" if match else f"a page could not be read: {error}"
        )
    if len(errors) > MAX_PAGE_WARNINGS:
        warnings.append(f"{len(errors) - MAX_PAGE_WARNINGS} more pages could not be read")
    return warnings


def extract_pdf(
    data: bytes,
    timeout: float,
    memory_mb: int,
    cancelled: Callable[[], bool] | None = None,
    ocr: ocr_mod.OcrSetup | None = None,
) -> tuple[list[Section], list[str]]:
    """(sections, warnings); raises ExtractionError when no page has text, and
    ExtractionCancelled when ``cancelled()`` turned true (or the child was killed).
    Pages without a text layer are read by OCR when they are at least half the pages
    (a scan; :func:`_with_ocr`); ``ocr``: Tesseract as the run uses it (found on PATH
    when not given)."""
    if b"%PDF-" not in data[:1024]:
        raise ExtractionError("not a PDF file (no %PDF header)")
    try:
        result = run_pdf_worker(data, timeout=timeout, memory_mb=memory_mb, cancelled=cancelled)
    except PdfWorkerCancelled as exc:
        raise ExtractionCancelled(str(exc)) from None
    except PdfWorkerTimeout as exc:  # out of time: tried again by the next add
        raise ResourceLimit(
            f"{exc}; the next add tries again (ingest.pdf_timeout in the config raises the limit)"
        ) from None
    except PdfWorkerError as exc:
        raise ExtractionError(str(exc)) from None
    sections = [
        Section(normalise_newlines(text).strip(), {"page": number})
        for number, text in enumerate(result.pages, start=1)
        if text.strip()
    ]
    failed = {int(m[1]) for e in result.errors if (m := _PAGE_ERROR.fullmatch(e))}
    blank = [n for n, text in enumerate(result.pages, start=1) if not text.strip() and n not in failed]
    if blank and 2 * len(blank) >= len(result.pages):
        return _with_ocr(data, sections, blank, result.errors, timeout, memory_mb, cancelled, ocr)
    if not sections:
        if result.errors:
            raise ExtractionError(f"PDF could not be read ({result.errors[0]})")
        raise ExtractionError("PDF has no extractable text (scanned images?)")
    return sections, page_warnings(result.errors)


def _with_ocr(
    data: bytes,
    sections: list[Section],
    blank: list[int],
    errors: list[str],
    timeout: float,
    memory_mb: int,
    cancelled: Callable[[], bool] | None,
    ocr: ocr_mod.OcrSetup | None,
) -> tuple[list[Section], list[str]]:
    """A scan: the pages without a text layer read by OCR, in its own child process.
    A PDF whose pages mostly have text never comes here (it is read as it always was)."""
    setup = ocr if ocr is not None else ocr_mod.setup_for()
    if not setup.available and sections:
        return sections, page_warnings(errors)  # what the text layer holds, as without OCR
    try:
        pages, more = ocr_mod.ocr_pdf_pages(
            data, blank, setup, timeout=timeout, memory_mb=memory_mb, cancelled=cancelled
        )
    except ocr_mod.OcrCancelled as exc:
        raise ExtractionCancelled(str(exc)) from None
    for page in pages:
        meta: dict = {"page": page.page, "ocr": True}
        if page.confidence is not None:
            meta["ocr_confidence"] = page.confidence
        sections.append(Section(normalise_newlines(page.text).strip(), meta))
    sections.sort(key=lambda s: s.metadata["page"])
    errors = errors + more
    if not sections:
        if errors:
            raise ExtractionError(f"PDF could not be read ({errors[0]})")
        raise ExtractionError("PDF has no extractable text: no text layer, and OCR found none in its images")
    return sections, page_warnings(errors)
