"""The JSON schemas of the tools a chat model may call (:mod:`kbdesk.chat.tools` runs them):
``kb_search`` with its ``filters`` (made from :data:`kbdesk.filter_fields.FIELDS`) and
``note_search``."""

from __future__ import annotations

from typing import Any

from kbdesk.filter_fields import FIELDS

FILTERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "Optional: search only some documents. Leave it out to search everything. "
        'Example: {"path": "projects/**", "type": "pdf,md", "since": "2026-11-01", "tags": "roadmap"}'
    ),
    "properties": {
        spec.key: {"type": "string", "description": spec.tool, **({"enum": list(spec.choices)} if spec.choices else {})}
        for spec in FIELDS
    },
}
"""The ``filters`` argument of ``kb_search`` (:meth:`kbdesk.filters.Filters.from_dict` reads
it; lists are accepted where a comma-separated string is shown)."""

KB_SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "kb_search",
        "description": (
            "Search knowledge bases for relevant information. "
            "Returns text passages from uploaded documents that match the query."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query — use natural language"},
                "max_results": {"type": "integer", "description": "Maximum results to return (1-20, default 5)"},
                "filters": FILTERS_SCHEMA,
            },
            "required": ["query"],
        },
    },
}

NOTE_SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "note_search",
        "description": (
            "Search the user's notes. Returns short notes that match the query; set semantic "
            "to true to also find notes by meaning, not only by their words."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query — use natural language"},
                "semantic": {
                    "type": "boolean",
                    "description": "Also search by meaning (vector similarity); default false",
                },
                "max_results": {"type": "integer", "description": "Maximum results to return (1-20, default 5)"},
            },
            "required": ["query"],
        },
    },
}
