"""The machine and the software under test, as one dict (stored with every result) and one line."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
from typing import Any

from harness.blas import blas_info, blas_line
from harness.paths import ROOT


def _cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def _caches() -> str:
    with contextlib.suppress(Exception):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        return "; ".join(
            line.split(":")[0].strip() + " " + line.split(":", 1)[1].strip()
            for line in out.splitlines()
            if re.match(r"\s*L[23] cache", line)
        )
    return ""


def _memory() -> str:
    with contextlib.suppress(OSError), open("/proc/meminfo") as fh:
        return f"{int(fh.readline().split()[1]) / 1e6:.1f} GB"
    return "?"


def git_revision() -> str:
    """Short HEAD of this repository, noting uncommitted changes under ``src/``."""
    with contextlib.suppress(Exception):
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"], capture_output=True, text=True, check=False
        ).stdout.strip()
        return head + (" (src/ has uncommitted changes)" if dirty else "")
    return ""


def _sqlite() -> dict[str, Any]:
    """SQLite and sqlite-vec as kbdesk loads them (its own driver choice)."""
    from kbdesk.store.sqlite.driver import choose_driver, load_extensions

    driver = choose_driver("auto")
    out: dict[str, Any] = {
        "sqlite_driver": driver.name,
        "sqlite": driver.sqlite_version,
        "sqlite_vec": driver.vec_version,
        "sqlite_vec_build_flags": "?",
    }
    if driver.vec_loaded:
        conn = driver.module.connect(":memory:")
        load_extensions(conn, driver)
        flags = re.search(r"Build flags:(.*)", conn.execute("SELECT vec_debug()").fetchone()[0])
        conn.close()
        out["sqlite_vec_build_flags"] = (flags.group(1).strip() if flags else "?") or "(none)"
    return out


def machine_info() -> dict[str, Any]:
    import numpy as np

    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu": _cpu_model(),
        "cache": _caches(),
        "memory": _memory(),
        "loadavg": list(os.getloadavg()),
        "numpy": np.__version__,
        "blas": blas_info(),
        **_sqlite(),
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")},
        "git": git_revision(),
    }


def machine_line(m: dict[str, Any]) -> str:
    """The machine in one sentence, for a script's report."""
    return (
        f"{m['cpus']} CPUs ({m['cpus_usable']} usable; {m['cpu']}), {m['memory']} RAM, load average "
        f"{m['loadavg'][0]:.1f} at start; Python {m['python']} ({m['implementation']}), {m['platform']}; "
        f"numpy {m['numpy']} with {blas_line(m['blas'])}; SQLite {m['sqlite']} via {m['sqlite_driver']}, "
        f"sqlite-vec {m['sqlite_vec'] or 'not loaded'}; kbdesk at {m['git'] or '?'}"
    )
