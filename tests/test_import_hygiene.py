"""The core never imports a UI toolkit: proven in a fresh interpreter."""

import subprocess
import sys

CORE = [
    "kbdesk",
    "kbdesk.config",
    "kbdesk.paths",
    "kbdesk.models",
    "kbdesk.store",
    "kbdesk.store.sqlite",
    "kbdesk.search",
    "kbdesk.desk",
    "kbdesk.cli.main",
]


def test_core_and_cli_do_not_import_textual():
    code = (
        "import sys, importlib\n"
        f"for name in {CORE!r}: importlib.import_module(name)\n"
        "from kbdesk import open_desk\n"
        "import tempfile\n"
        "d = open_desk(home=tempfile.mkdtemp()); d.create_kb('x'); d.search(['x'], 'hello'); d.close()\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m == 'textual' or m.startswith('textual.') or m.startswith('kbdesk.tui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"UI modules imported by the core: {out.stdout.strip()}"


def test_importing_kbdesk_has_no_side_effects(tmp_path):
    """Importing must not create directories or open databases."""
    home = tmp_path / "untouched"
    code = f"import os; os.environ['KBDESK_HOME'] = {str(home)!r}\nimport kbdesk, kbdesk.desk, kbdesk.cli.main\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not home.exists()


def _imports(path, module: str, modules: set[str]) -> set[str]:
    """The kbdesk modules ``module`` imports, at any depth of its code (lazy imports count)."""
    import ast

    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found.update(n for n in names if n in modules and n != module)
    return found


def test_no_module_imports_one_that_imports_it_back():
    """No import circles, directly or through others (a package counts as its __init__)."""
    from pathlib import Path

    import kbdesk

    root = Path(kbdesk.__file__).parent.parent
    files = {
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (root / "kbdesk").rglob("*.py")
    }
    graph = {m: _imports(p, m, set(files)) for m, p in files.items()}
    circles = []
    for start in graph:  # every module that can reach itself again
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m == start:
                circles.append(start)
                break
            if m not in seen:
                seen.add(m)
                todo.extend(graph[m])
    assert circles == [], f"modules in an import circle: {sorted(circles)}"


FACES = ("kbdesk.cli", "kbdesk.tui", "kbdesk.serve", "kbdesk.mcp")
ENGINES = ("kbdesk.store.sqlite", "kbdesk.store.postgres")
TOOLKITS = ("click", "textual", "rich", "fastapi", "starlette", "uvicorn", "mcp")


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _all_imports(path) -> set[str]:
    """Every module ``path`` imports, kbdesk's and others', at any depth of its code."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _modules():
    from pathlib import Path

    import kbdesk

    root = Path(kbdesk.__file__).parent.parent
    for path in sorted((root / "kbdesk").rglob("*.py")):
        yield ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"), path


def test_import_contracts():
    """The core never imports a face or a UI/web toolkit; the faces never import a store
    engine (they reach the store through the Desk and :mod:`kbdesk.store`'s neutral parts)."""
    broken = []
    for module, path in _modules():
        imports = _all_imports(path)
        if _within(module, FACES):
            broken += [f"{module} imports {n}" for n in sorted(imports) if _within(n, ENGINES)]
        else:
            broken += [
                f"{module} imports {n}"
                for n in sorted(imports)
                if _within(n, FACES) or (n.split(".")[0] in TOOLKITS and not n.startswith("kbdesk"))
            ]
    assert broken == []
