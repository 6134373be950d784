"""Jupyter notebooks (.ipynb) → Markdown cells and code cells, in order, as Markdown is read.

The notebook becomes one Markdown text — each Markdown cell as written, each code cell
fenced in its language, followed by its text output (``stream`` and ``text/plain``
results, at most :data:`MAX_OUTPUT_CHARS` per output) — and is read by the Markdown
reader (:mod:`.markdown_text`), so the Markdown headings give the heading path. Images
and other binary outputs (base64) are never read. ``metadata.title`` and
``metadata.authors`` go into the metadata.
"""

from __future__ import annotations

import json
from typing import Any

from kbdesk.ingest.limits import Budget
from kbdesk.ingest.markdown_text import extract_markdown
from kbdesk.ingest.sections import ExtractionError, Section

MAX_OUTPUT_CHARS = 2000


def _source(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value or "")


def extract_notebook(text: str, budget: Budget) -> list[Section]:
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ExtractionError(f"notebook is not valid JSON ({str(exc)[:100]})") from None
    if not isinstance(nb, dict):
        raise ExtractionError("notebook is not a Jupyter notebook (no cells)")
    cells = nb.get("cells")
    if cells is None and isinstance(nb.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells", [])]
    if not isinstance(cells, list):
        raise ExtractionError("notebook is not a Jupyter notebook (no cells)")
    meta: dict[str, Any] = nb["metadata"] if isinstance(nb.get("metadata"), dict) else {}
    language = ""
    if isinstance(meta.get("language_info"), dict):
        language = str(meta["language_info"].get("name") or "")
    parts: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        source = _source(cell.get("source", cell.get("input", ""))).strip("\n")
        if kind in ("markdown", "heading"):
            if kind == "heading":  # nbformat 3
                source = "#" * int(cell.get("level", 1) or 1) + " " + source
            parts.append(source)
        elif kind == "code":
            if source.strip():
                fence = "````" if "```" in source else "```"
                parts.append(f"{fence}{language}\n{source}\n{fence}")
            for output in cell.get("outputs") or []:
                if not isinstance(output, dict):
                    continue
                shown = output.get("text")
                if shown is None and isinstance(output.get("data"), dict):
                    shown = output["data"].get("text/plain")
                out = _source(shown).strip()
                if out:
                    parts.append(out[:MAX_OUTPUT_CHARS])
        elif kind == "raw" and source.strip():
            parts.append(source)
    body = "\n\n".join(p for p in parts if p.strip())
    budget.spend(len(body), "the notebook")
    if not body.strip():
        raise ExtractionError("notebook has no text")
    props: dict[str, str] = {}
    if isinstance(meta.get("title"), str) and meta["title"].strip():
        props["title"] = " ".join(meta["title"].split())[:500]
    authors = meta.get("authors")
    if isinstance(authors, list):
        named = [a.get("name") if isinstance(a, dict) else a for a in authors]
        names = [str(n) for n in named if n]
        if names:
            props["author"] = ", ".join(names)[:500]
    sections = extract_markdown(body)
    for section in sections:
        section.metadata = {**section.metadata, **props}
    return sections
