"""Helpers of the end-to-end tests (a module of its own: ``from conftest import`` is
ambiguous when several test folders have a conftest.py)."""

from __future__ import annotations

import subprocess
import sys


def e2e_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    run = subprocess.run(
        [sys.executable, "-c", "from kbdesk.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=1800,  # a turn is up to four requests of ~1,000 tokens read one at a time (--n_batch 1)
    )
    if check:
        assert run.returncode == 0, run.stderr
    return run
