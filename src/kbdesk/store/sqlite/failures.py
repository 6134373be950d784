"""What a failed write to the SQLite file tells a person.

SQLite reports a full disk, an I/O error, a file that turned read-only or damaged pages
as ``OperationalError`` (or ``DatabaseError``), and rolls the transaction back itself
(a ``ROLLBACK`` after that fails with "no transaction is active"). The store turns them
into :class:`~kbdesk.errors.DatabaseWriteError` — a ``StoreError`` with one line
naming the file and what happened — so every face reports them the same way (the CLI:
one line and exit code 4, ``kbdesk.cli.ingest``). An error of SQL itself (a bug) is not
translated: it stays what it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbdesk.errors import DatabaseWriteError, StoreError

__all__ = ["DatabaseWriteError", "TransactionLost", "write_failure"]

SQLITE_ERROR = 1  # a SQL error (a bug), not the file's
SQLITE_READONLY, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 8, 10, 11, 13, 14, 26


class TransactionLost(DatabaseWriteError):
    """SQLite undid the whole transaction (after a full disk, an I/O error, running out of
    memory): a step inside it did not fail alone, whatever caught it. Its cause is the
    driver's error."""


def write_failure(exc: BaseException, path: Path | str, module: Any) -> StoreError | None:
    """The :class:`DatabaseWriteError` ``exc`` (raised by the driver ``module``) is, or None
    when it is not the file's failure."""
    if isinstance(exc, TransactionLost) and exc.__cause__ is not None:
        exc = exc.__cause__
    if not isinstance(exc, module.DatabaseError) or isinstance(exc, module.IntegrityError | module.ProgrammingError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).strip() or type(exc).__name__
    if primary == SQLITE_FULL or "disk is full" in text:
        return DatabaseWriteError(f"the disk holding {path} is full ({text})")
    if primary == SQLITE_IOERR or "disk I/O error" in text:
        return DatabaseWriteError(f"cannot write {path}: the disk reported an error ({text})")
    if primary == SQLITE_READONLY:
        return DatabaseWriteError(f"cannot write {path}: it is read-only now ({text})")
    if primary == SQLITE_CANTOPEN:
        return DatabaseWriteError(f"cannot write {path}: it cannot be opened ({text})")
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB) or "malformed" in text:
        return DatabaseWriteError(f"{path} is damaged ({text}): `kbdesk doctor` says what to do")
    if isinstance(exc, module.OperationalError) and primary != SQLITE_ERROR:
        return DatabaseWriteError(f"cannot write {path}: {text}")
    return None
