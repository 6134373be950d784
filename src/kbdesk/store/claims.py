"""Who is working on a document: claims that tell a live runner from a dead one.

A claim is ``host:pid:start:token``. ``start`` fingerprints the process (boot id and
start time from /proc on Linux), so a pid reused after a crash or a reboot is not
taken for the runner that died; ``token`` tells apart two runs inside one process
(two threads adding the same folder). A claim is alive while

* its process is this one and its token is registered here (the run has not ended),
* or its process is another one on this host that still runs with the same start,
* or it comes from another host (a team server's other client) and its document moved
  within the last ``FOREIGN_SILENCE`` seconds — a runner there cannot be asked, so one
  that has been silent that long is taken for dead.

Every claim is taken in the same write that bumps the document's ``version``, so a
runner that lost its claim (taken over after it was thought dead) can never write
over the newer work: its version no longer matches.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

_LIVE: set[str] = set()
_LOCK = threading.Lock()
FOREIGN_SILENCE = 15 * 60.0  # seconds without a status move after which another host's runner is taken for dead


def _start_of(pid: int) -> str:
    """A fingerprint of process ``pid``'s start ('' where /proc is not there)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        # the command name (field 2) may hold spaces and parentheses: split after its ")"
        fields = stat[stat.rindex(b")") + 2 :].split()
        started = fields[19].decode()
    except (OSError, ValueError, IndexError):
        return ""
    return f"{_boot_id()}.{started}"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()[:8]
    except OSError:
        return ""


def new_claim() -> str:
    """A claim for one run in this process, alive until :func:`end_claim`."""
    token = uuid.uuid4().hex[:12]
    claim = f"{socket.gethostname()}:{os.getpid()}:{_start_of(os.getpid())}:{token}"
    with _LOCK:
        _LIVE.add(claim)
    return claim


def end_claim(claim: str) -> None:
    with _LOCK:
        _LIVE.discard(claim)


def claim_alive(claim: str | None, last_moved: Any = None) -> bool:
    """Whether the runner named by ``claim`` may still be working; ``last_moved`` is
    when its document last changed (ISO-8601 text or a datetime)."""
    if not claim:
        return False
    parts = claim.split(":")
    if len(parts) == 2:  # written by an older kbdesk: host:pid
        host, pid_text, start = parts[0], parts[1], ""
    elif len(parts) == 4:
        host, pid_text, start, _token = parts  # the token tells runs of one process apart, not liveness
    else:
        return False
    if host != socket.gethostname():
        return last_moved is None or _age(last_moved) < FOREIGN_SILENCE
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        with _LOCK:
            return claim in _LIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return False
    return not start or _start_of(pid) in ("", start)


def describe(claim: str | None) -> str:
    """The runner behind a claim, for a person: 'process 1234 on host'."""
    if not claim:
        return "no process"
    parts = claim.split(":")
    if len(parts) >= 2:
        same = parts[0] == socket.gethostname()
        return f"kbdesk process {parts[1]}" + ("" if same else f" on {parts[0]}")
    return "another kbdesk process"


def _age(moment: Any) -> float:
    """Seconds since ``moment`` (0 when it cannot be read: then it counts as recent)."""
    try:
        when = moment if isinstance(moment, datetime) else datetime.fromisoformat(str(moment).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (datetime.now(UTC) - when).total_seconds()
