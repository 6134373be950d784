"""The argument parser every bench script starts from, and the command line it reports."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def parser(doc: str | None, *, quick: str | None = None, scifact: bool = False) -> argparse.ArgumentParser:
    """A parser whose help is the script's docstring; ``quick`` adds ``--quick`` with that help,
    ``scifact`` adds ``--scifact DIR`` (see :func:`harness.paths.scifact_dir`)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if quick:
        ap.add_argument("--quick", action="store_true", help=quick)
    if scifact:
        ap.add_argument(
            "--scifact",
            metavar="DIR",
            help="BEIR-layout SciFact folder (default: $KBDESK_BENCH_SCIFACT, else "
            "shared/eval/scifact beside the repository)",
        )
    return ap


def command_line(argv: list[str] | None = None, script: str | None = None) -> str:
    """How to run this again from the repository root: ``.venv/bin/python bench/x.py --quick``."""
    name = Path(script or sys.argv[0]).name
    args = sys.argv[1:] if argv is None else argv
    return shlex.join([".venv/bin/python", f"bench/{name}", *args])
