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
