"""Benchmark: how kbdesk finds definitions in code, against a real parser of each language.

Not part of the test run; needs ``tree-sitter``, ``tree-sitter-go`` and
``tree-sitter-javascript`` (not kbdesk dependencies: install them in a scratch venv).
For every ``.go`` and ``.js`` file under the folders given, the definitions tree-sitter's
grammars find (functions, methods with their Go receiver type, classes, types,
``const f = () => …``) against those of kbdesk's rules (:mod:`kbdesk.ingest.code_text`):
how many of tree-sitter's (file, heading path) pairs the rules find, with the same first
line, and how many more the rules find; CPU time of each (parse and walk / rules), and
Python's ``ast`` against the rules on the ``.py`` files.

    python bench/bench_code_parsers.py DIR [DIR ...]     # e.g. checkouts of spf13/cobra, expressjs/express
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from kbdesk.ingest import code_text


def tree_sitter_defs(path: Path, parser) -> list[tuple[tuple[str, ...], int]]:
    tree = parser.parse(path.read_bytes())
    found: list[tuple[tuple[str, ...], int]] = []
    stack = [(tree.root_node, ())]
    while stack:
        node, inside = stack.pop()
        name, start, here = None, node.start_point[0], inside
        if node.type in ("function_declaration", "class_declaration", "method_definition", "type_spec"):
            n = node.child_by_field_name("name")
            name = n.text.decode() if n else None
            if node.type == "type_spec" and node.parent is not None:
                start = node.parent.start_point[0]
        elif node.type == "method_declaration":  # Go: the receiver's type, then the method
            n, r = node.child_by_field_name("name"), node.child_by_field_name("receiver")
            m = re.search(r"\*?\s*([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*\)$", r.text.decode()) if r else None
            if n is not None:
                found.append(((*([m.group(1)] if m else []), n.text.decode()), start))
        elif node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is not None and value.type in ("arrow_function", "function_expression", "function"):
                n = node.child_by_field_name("name")
                name = n.text.decode() if n else None
                start = node.parent.start_point[0] if node.parent is not None else start
        if name:
            found.append(((*inside, name), start))
            if node.type == "class_declaration":
                here = (*inside, name)
        stack.extend((c, here) for c in reversed(node.children))
    return found


def compare(files: list[Path], language: str, ours, theirs) -> dict:
    n = same = lines = extra = 0
    t_ours = t_theirs = 0.0
    size = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        size += len(text.encode())
        start = time.thread_time()
        mine = {}
        for d in ours(text, language):
            mine.setdefault(tuple(d.path), d.start)
        t_ours += time.thread_time() - start
        start = time.thread_time()
        other = {}
        for key, line in theirs(path, text):
            other.setdefault(key, line)
        t_theirs += time.thread_time() - start
        n += len(other)
        same += len(set(other) & set(mine))
        lines += sum(1 for k in other if k in mine and mine[k] == other[k])
        extra += len(set(mine) - set(other))
    return {
        "language": language,
        "files": len(files),
        "MB": round(size / 1e6, 2),
        "reference definitions": n,
        "rules found %": round(100 * same / max(n, 1), 1),
        "same first line %": round(100 * lines / max(n, 1), 1),
        "rules' extra": extra,
        "rules MB/s": round(size / 1e6 / max(t_ours, 1e-9), 1),
        "reference MB/s": round(size / 1e6 / max(t_theirs, 1e-9), 1),
    }


def main() -> None:
    import tree_sitter_go
    import tree_sitter_javascript
    from tree_sitter import Language, Parser

    roots = [Path(p) for p in sys.argv[1:]]
    files = [p for r in roots for p in sorted(r.rglob("*")) if p.is_file() and "node_modules" not in p.parts]
    rules = lambda text, language: code_text._rule_defs(text.split("\n"), language)  # noqa: E731
    rows = []
    for suffix, language, grammar in (
        (".go", "go", tree_sitter_go.language()),
        (".js", "javascript", tree_sitter_javascript.language()),
    ):
        parser = Parser(Language(grammar))
        chosen = [p for p in files if p.suffix == suffix]
        if chosen:
            rows.append(compare(chosen, language, rules, lambda path, _text, p=parser: tree_sitter_defs(path, p)))

    def by_ast(_path, text):
        return [(tuple(d.path), d.start) for d in code_text._python_defs(text) or []]

    python = [p for p in files if p.suffix == ".py"]
    if python:
        rows.append(compare(python, "python", rules, by_ast))
    keys = list(rows[0]) if rows else []
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
