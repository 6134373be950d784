"""What a bounded reader child (the PDF reader, the OCR worker) answered once it ended:
its JSON object, or why there is none — the same reading of an exit for both, each
caller wording its own errors."""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from typing import Any

# what went wrong, when the child gave no usable answer
MEMORY = "memory"  # it hit its memory cap (its own exit code, or Python's MemoryError)
CPU = "cpu"  # the kernel stopped it at its processor-time limit (SIGXCPU)
CRASHED = "crashed"  # any other exit without a JSON object ("how": the signal or exit code)
FAILED = "failed"  # it answered {"error": ...}: the file cannot be read ("how": the reason)


@dataclass(frozen=True)
class Answer:
    result: dict[str, Any] | None = None
    fault: str | None = None
    how: str = ""


def read_answer(rc: int, out: bytes, err: bytes, exit_memory: int) -> Answer:
    """The child's answer from its exit code, stdout and stderr."""
    if rc == exit_memory or (rc != 0 and b"MemoryError" in err):
        return Answer(fault=MEMORY)
    if rc == -getattr(signal, "SIGXCPU", -1000):  # only the kernel sends it: RLIMIT_CPU was reached
        return Answer(fault=CPU)
    try:
        result = json.loads(out)
    except ValueError:
        result = None
    if rc != 0 or not isinstance(result, dict):
        return Answer(fault=CRASHED, how=f"signal {-rc}" if rc < 0 else f"exit code {rc}")
    if "error" in result:
        return Answer(fault=FAILED, how=str(result["error"]))
    return Answer(result=result)
