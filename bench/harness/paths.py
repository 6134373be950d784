"""Where things are: all relative to this repository, a temporary folder, or an explicit option."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"  # gitignored: cached databases, result JSON, scratch folders
SCIFACT_ENV = "KBDESK_BENCH_SCIFACT"


def results_dir() -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS


@contextlib.contextmanager
def scratch_dir(prefix: str = "scratch-") -> Iterator[Path]:
    """A folder under ``bench/results/`` (same file system as the cached databases), removed after."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=results_dir()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def scifact_dir(explicit: str | Path | None = None) -> Path:
    """The BEIR-layout SciFact folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/``).

    In order: the script's ``--scifact`` option, ``$KBDESK_BENCH_SCIFACT``, then
    ``shared/eval/scifact`` beside the repository (the project's layout).
    """
    for candidate in (explicit, os.environ.get(SCIFACT_ENV)):
        if candidate:
            return Path(candidate).expanduser().resolve()
    return ROOT.parent / "shared" / "eval" / "scifact"


def require_scifact(explicit: str | Path | None = None) -> Path:
    """:func:`scifact_dir`, or a one-line exit that says how to point at the data. The folder found
    is exported as ``$KBDESK_BENCH_SCIFACT``, so child processes read the same one."""
    path = scifact_dir(explicit)
    if not (path / "corpus.jsonl").is_file():
        raise SystemExit(
            f"SciFact not found at {path} (no corpus.jsonl): pass --scifact DIR or set "
            f"{SCIFACT_ENV} to a BEIR-layout SciFact folder"
        )
    os.environ[SCIFACT_ENV] = str(path)
    return path
