"""Fresh processes: a measurement run in its own interpreter (its own peak RSS, no memory or
caches left by the previous one) with its JSON result handed back, and kbdesk's CLI as a process.

    result = run_in_child(measure, n=10_000, d=384)   # measure(n=..., d=...) in a new python

``measure`` must be a module-level function of a file in ``bench/`` taking and returning JSON
(numpy scalars are turned into floats on the way back).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.paths import BENCH

_BOOT = f"import sys; sys.path.insert(0, {str(BENCH)!r}); from harness.child import serve; serve(sys.argv[1:])"
CLI = "from kbdesk.cli.main import main; main()"


def run_in_child(fn: Callable[..., Any], /, **kwargs: Any) -> Any:
    """Call ``fn(**kwargs)`` in a fresh interpreter and return what it returned (through JSON).
    The child's output goes to this process's stdout and stderr; a failure raises."""
    target = f"{Path(inspect.getfile(fn)).resolve()}:{fn.__qualname__}"
    with tempfile.TemporaryDirectory(prefix="kbdesk-bench-child-") as tmp:
        args, out = Path(tmp) / "args.json", Path(tmp) / "result.json"
        args.write_text(json.dumps(kwargs))
        subprocess.run([sys.executable, "-c", _BOOT, target, str(args), str(out)], check=True)
        return json.loads(out.read_text())


def serve(argv: list[str]) -> None:
    """The child's side: import the script as a module (its ``__main__`` block does not run),
    call the function, write its result."""
    target, args, out = argv
    path, name = target.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    assert spec and spec.loader, target
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look their module up
    spec.loader.exec_module(module)
    result = getattr(module, name)(**json.loads(Path(args).read_text()))
    Path(out).write_text(json.dumps(result, default=float))


def kbdesk_cli(*args: Any) -> list[str]:
    """The command line of a fresh ``kbdesk`` process on this interpreter (no install needed)."""
    return [sys.executable, "-c", CLI, *map(str, args)]
