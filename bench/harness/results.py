"""Result files: JSON under ``bench/results/`` (gitignored), one per script and mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.paths import results_dir


def save_result(name: str, data: Any) -> Path:
    """Write ``bench/results/<name>.json`` (numpy scalars as floats) and return its path."""
    path = results_dir() / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, default=float) + "\n")
    return path


def load_result(name: str) -> Any | None:
    """``bench/results/<name>.json``, or None when it is missing or unreadable."""
    try:
        return json.loads((results_dir() / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None
