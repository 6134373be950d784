"""Documents embedded in Word, PowerPoint and Excel files (``word/embeddings/``,
``ppt/embeddings/``, ``xl/embeddings/``), read like an e-mail's attachments: each in a
format kbdesk reads (a workbook in a report, a PDF, another document) is extracted within
the enclosing file's budget and comes after its text, its sections under the embedded
file's name (``["Book1.xlsx", …]``). A chart's own data workbook is not one of them
(the chart is read with its data already). Embedding inside embedding is followed
:data:`~kbdesk.ingest.limits.MAX_NESTING` levels deep; OLE objects (``.bin``) and
other formats are left out, a broken embedded file costs a warning, not the document.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from contextvars import ContextVar

from kbdesk.ingest.limits import MAX_NESTING, Budget
from kbdesk.ingest.office_props import relationships
from kbdesk.ingest.sections import ExtractionError, ResourceLimit, Section
from kbdesk.ingest.zip_parts import ZipParts

FOLDERS = ("word/embeddings/", "ppt/embeddings/", "xl/embeddings/")
_DEPTH: ContextVar[int] = ContextVar("kbdesk_embedded_depth", default=0)


def embedded_sections(
    data: bytes,
    budget: Budget,
    warnings: list[str],
    read: Callable[[bytes, str, Budget], list[Section]],
    readable: Callable[[str], bool],
) -> list[Section]:
    """The sections of the documents embedded in the OOXML package ``data``; ``read`` reads
    one (bytes, its file name, the budget), ``readable`` says which names are worth it."""
    depth = _DEPTH.get()
    if depth >= MAX_NESTING:
        return []
    try:
        parts = ZipParts(data, "Office file")
    except ExtractionError:
        return []
    out: list[Section] = []
    names = parts.names()
    chart_data = {  # a chart's own workbook: its data is read with the chart already
        target
        for chart in names
        if "/charts/" in chart and chart.endswith(".xml") and "/_rels/" not in chart
        for target, _kind in relationships(parts, chart).values()
    }
    for name in names:
        base = posixpath.basename(name)
        if not name.startswith(FOLDERS) or not readable(base) or name in chart_data:
            continue
        token = _DEPTH.set(depth + 1)
        try:
            inner = parts.read(name)
            sections = read(inner, base, budget) if inner else []
        except ResourceLimit:
            raise
        except ExtractionError as exc:
            warnings.append(f"embedded {base} not read: {exc}")
            continue
        finally:
            _DEPTH.reset(token)
        for section in sections:
            section.metadata = {**section.metadata, "headings": [base, *(section.metadata.get("headings") or [])]}
            out.append(section)
    return out
