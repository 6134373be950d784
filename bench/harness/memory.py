"""Memory of this process: current and peak resident set size, and file sizes (MB = 10^6 bytes)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
from pathlib import Path


def rss_mb() -> float:
    """Current resident set size, from ``/proc/self/statm``."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def rss_now() -> tuple[float, float]:
    """(current, peak so far): what a phase of a measurement records."""
    return rss_mb(), peak_rss_mb()


def malloc_trim() -> bool:
    """Hand freed heap back to the OS (glibc); False where there is no such call."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        return True
    return False


def file_mb(path: Path | str) -> float:
    path = Path(path)
    return path.stat().st_size / 1e6 if path.exists() else 0.0
