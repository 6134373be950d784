"""What a user reads speaks of kbdesk's own behaviour, never of "the seed" (the design kbdesk
re-imagines): the docs, every command's help, the HTTP interface's OpenAPI document, the chat
and MCP tool descriptions, and every string in the package that is not a docstring (errors,
notices, log lines, served details)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "kbdesk"
# "seed", "seeds", "seed's", "Seed 000", "seed_008": the design; "seeded" and "random seed" are not it
DESIGN_WORD = re.compile(r"(?<!random )(?<!-)\bseeds?(?:\b|_)", re.IGNORECASE)
SQL_COMMENT = re.compile(r"^\s*--.*$", re.MULTILINE)  # in a schema's SQL: developers' comments, like code comments


def mentions(text: str) -> list[str]:
    return [text[max(0, m.start() - 40) : m.end() + 40].replace("\n", " ") for m in DESIGN_WORD.finditer(text)]


def test_the_pattern_finds_the_design_and_leaves_random_seeds_alone():
    for design in ("it is not the seed's schema", "migration 'seed_008'", "Seed 000 §1 says", "the seeds"):
        assert mentions(design), design
    assert not mentions("a random seed of 42, --seed 7, seeded by its hash")


def test_the_docs_do_not_speak_of_the_seed():
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    found = {p.name: hits for p in pages if (hits := mentions(p.read_text(encoding="utf-8")))}
    assert found == {}


def _helps(command: click.Command, ctx: click.Context) -> Iterator[tuple[str, str]]:
    yield ctx.command_path, command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from _helps(sub, click.Context(sub, info_name=name, parent=ctx))


def test_no_command_help_speaks_of_the_seed():
    from kbdesk.cli.help_page import page
    from kbdesk.cli.main import cli

    helps = dict(_helps(cli, click.Context(cli, info_name="kbdesk")))
    assert len(helps) > 20 and "kbdesk pg setup" in helps  # the walk reached the subcommands
    helps["kbdesk --help"] = page(100)
    assert {path: hits for path, text in helps.items() if (hits := mentions(text))} == {}


def test_the_served_interface_and_the_tools_do_not_speak_of_the_seed():
    from kbdesk.chat.tools import KB_SEARCH_TOOL, NOTE_SEARCH_TOOL
    from kbdesk.desk import open_desk
    from kbdesk.mcp.server import INSTRUCTIONS, KB_LIST_TOOL, KB_SEARCH_SCHEMA
    from kbdesk.serve.app import create_app

    desk = open_desk()
    try:
        answer = TestClient(create_app(desk, resume=False)).get("/api/openapi.json")
    finally:
        desk.close()
    assert answer.status_code == 200 and "/api/knowledge-bases" in answer.json()["paths"]
    spec = answer.text
    tools = json.dumps([KB_SEARCH_TOOL, NOTE_SEARCH_TOOL, KB_LIST_TOOL, KB_SEARCH_SCHEMA, INSTRUCTIONS])
    assert mentions(spec) == [] and mentions(tools) == []


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (developers' text; command docstrings are checked as help)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_no_message_in_the_package_speaks_of_the_seed():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                hits = mentions(SQL_COMMENT.sub("", node.value))
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {hit}" for hit in hits]
    assert found == []
