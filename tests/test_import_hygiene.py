"""The core never imports a UI toolkit: proven in a fresh interpreter."""

import subprocess
import sys

CORE = ["kbdesk", "kbdesk.config", "kbdesk.paths", "kbdesk.models", "kbdesk.store", "kbdesk.store.sqlite",
        "kbdesk.search", "kbdesk.desk", "kbdesk.cli.main"]


def test_core_and_cli_do_not_import_textual():
    code = (
        "import sys, importlib\n"
        f"for name in {CORE!r}: importlib.import_module(name)\n"
        "from kbdesk import open_desk\n"
        "import tempfile\n"
        "d = open_desk(home=tempfile.mkdtemp()); d.create_kb('x'); d.search(['x'], 'hello'); d.close()\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.') or m.startswith('kbdesk.tui'))\n"
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
