"""The filter fields are declared once (kbdesk.filter_fields): every face offers every
field — the CLI's flags, the filter line, the HTTP body, the model's and MCP's kb_search
schema, docs/SEARCH.md — and a field added there (not_tags) works on each of them."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kbdesk import open_desk
from kbdesk.chat.tools import FILTERS_SCHEMA
from kbdesk.cli.main import cli
from kbdesk.filter_fields import FIELDS
from kbdesk.filters import Filters
from kbdesk.filters_text import format_line, parse_line
from kbdesk.mcp.server import KB_SEARCH_SCHEMA
from vault_support import vault_kb

KEYS = {spec.key for spec in FIELDS}
DOCS = Path(__file__).resolve().parent.parent / "docs" / "SEARCH.md"


def test_every_face_offers_every_field():
    context = click.Context(cli)
    for command in ("search", "ask", "chat"):
        found = cli.get_command(context, command)
        assert found is not None, command
        flags = {opt for p in found.params for opt in p.opts}
        assert {spec.flag for spec in FIELDS} <= flags, command
    assert set(FILTERS_SCHEMA["properties"]) == KEYS  # the chat model's kb_search
    assert set(KB_SEARCH_SCHEMA["properties"]["filters"]["properties"]) == KEYS  # MCP's
    from kbdesk.serve.schemas import SearchFilters

    assert set(SearchFilters.model_fields) == KEYS
    for spec in FIELDS:  # each word of the line reads into its field
        value = {"choice": spec.choices[-1] if spec.choices else "", "since": "2026-01-02", "until": "2026-01-02"}
        given = value.get(spec.kind) or "x1"
        line = f"{spec.words[0]}:{given}" + (" since:2026-01-01" if spec.kind == "choice" else "")
        assert parse_line(line).to_dict().get(spec.key), line
    table = DOCS.read_text(encoding="utf-8")
    for spec in FIELDS:
        assert f"| `{spec.attr}`" in table.replace("`, `", "` | `") and f"`{spec.flag}" in table, spec.key


@pytest.mark.parametrize(
    "filters",
    [
        Filters(not_tags=("draft",)),
        Filters.from_dict({"not_tags": "draft,q2"}),
        Filters(path=("work/**",), exclude=("a,b/**",), types=("md",), tags=("q3",), any_tags=("x",), not_tags=("y",)),
    ],
)
def test_the_json_form_and_the_line_read_back(filters):
    assert Filters.from_dict(filters.to_dict()) == filters
    assert parse_line(format_line(filters)) == filters


def test_not_tags_leaves_out_tagged_documents_on_every_face(tmp_path, kbdesk_home):
    with open_desk() as desk:
        vault_kb(desk)
        library = {r.source for r in desk.search(["notes"], "roadmap", limit=20, filters={"not_tags": ["q3"]}).results}
        line = {r.source for r in desk.search(["notes"], "roadmap", limit=20, filters="nottag:draft").results}
    assert library == {"work/old-roadmap.md", "work/roadmap-review.pdf"}
    assert "work/plans/roadmap-draft.md" not in line and len(line) == 4
    result = CliRunner().invoke(cli, ["search", "notes", "roadmap", "-n", "20", "--not-tag", "q3", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert {r["source"] for r in answer["results"]} == library
    assert answer["filters"] == {"not_tags": ["q3"]}
    bad = CliRunner().invoke(cli, ["search", "notes", "roadmap", "--not-tag", "#"])
    assert bad.exit_code != 0 and "--not-tag must name tags" in bad.output
