"""Title, author and dates from a document's own properties, and the relationships of OOXML parts.

Office Open XML keeps them in ``docProps/core.xml`` (Dublin Core: ``dc:title``,
``dc:creator``, ``dcterms:created``, ``dcterms:modified``); OpenDocument in ``meta.xml``
(``dc:title``, ``meta:initial-creator``/``dc:creator``, ``meta:creation-date``,
``dc:date``); EPUB in its package document (``dc:title``, ``dc:creator``, ``dc:date``).
They go into every section's metadata under ``title``, ``author``, ``created`` and
``modified``, as an HTML page's title does.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from kbdesk.ingest.sections import ExtractionError
from kbdesk.ingest.xml_tree import Node, parse
from kbdesk.ingest.zip_parts import ZipParts

MAX_PROPERTY = 500  # characters kept of one property


def _clean(value: str) -> str:
    return " ".join(value.split())[:MAX_PROPERTY]


def properties_from(root: Node | None, fields: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """``{"title": …, "author": …}`` from the first non-empty element of each field's tags."""
    out: dict[str, str] = {}
    if root is None:
        return out
    found: dict[str, str] = {}
    for node in root.iter():
        if node.tag not in found:
            text = _clean(node.text_content())
            if text:
                found[node.tag] = text
    for key, tags in fields.items():
        value = next((found[t] for t in tags if t in found), "")
        if value:
            out[key] = value
    return out


OOXML_FIELDS = {
    "title": ("title",),
    "author": ("creator",),
    "created": ("created",),
    "modified": ("modified",),
}


def ooxml_properties(parts: ZipParts) -> dict[str, str]:
    data = parts.read("docProps/core.xml")
    if not data:
        return {}
    try:
        return properties_from(parse(data, "docProps/core.xml"), OOXML_FIELDS)
    except Exception:  # noqa: BLE001 - broken properties cost the properties, not the document
        return {}


def relationships(parts: ZipParts, part: str) -> dict[str, tuple[str, str]]:
    """rId → (target part, relationship type's last word) for ``part``."""
    folder, name = posixpath.split(part)
    data = parts.read(posixpath.join(folder, "_rels", name + ".rels"))
    if not data:
        return {}
    out: dict[str, tuple[str, str]] = {}
    try:
        tree = parse(data, f"the relationships of {part}")
    except ExtractionError:
        return {}  # a package cut short: the parts are found by their usual names
    for rel in tree.iter("Relationship"):
        if rel.get("TargetMode") == "External":
            continue
        target = rel.get("Target")
        target = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        out[rel.get("Id")] = (target, rel.get("Type").rsplit("/", 1)[-1])
    return out
