"""The faces (cli, tui, serve, mcp) reach the database only through the Desk.

Read from the source, not run: a face that writes ``desk.store`` (or ``self.desk.store``,
``state.desk().store``, ``lease.desk.store`` …) anywhere in its code fails here, so the
Desk stays the one place that decides what a face may ask of the store. No use is allowed:
every operation a face needs is a method of :class:`kbdesk.desk.Desk`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kbdesk

FACES = ("cli", "tui", "serve", "mcp")


def store_reaches(source: str) -> list[tuple[int, str]]:
    """Every ``<something>.store`` in ``source``, and ``getattr(<something>, "store")``:
    (line, the expression as written)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.expr):
            continue
        attribute = isinstance(node, ast.Attribute) and node.attr == "store"
        if attribute or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "store"
        ):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_the_check_sees_each_way_of_writing_it() -> None:
    source = (
        "desk.store.list_kbs()\n"
        "self.desk.store.capabilities\n"
        "state.desk().store\n"
        "s = getattr(desk, 'store')\n"
        "desk.kb('x'); store = None; restore = 1\n"
    )
    assert [line for line, _ in store_reaches(source)] == [1, 2, 3, 4]


def test_no_face_reaches_the_store() -> None:
    root = Path(kbdesk.__file__).parent
    broken = [
        f"{path.relative_to(root.parent)}:{line}: {text}"
        for face in FACES
        for path in sorted((root / face).rglob("*.py"))
        for line, text in store_reaches(path.read_text(encoding="utf-8"))
    ]
    assert broken == [], "faces reaching past the Desk (give the Desk the operation):\n" + "\n".join(broken)
