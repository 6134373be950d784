"""The SQLite engine: one database file in WAL mode, its migrations, how it stores chunks,
keyword rows (FTS5) and vectors (matrix files, sqlite-vec or numpy; the quantised tier for
large KBs), and its integrity check. The store itself is :class:`SqliteStore`."""

from kbdesk.store.sqlite.store import (
    IntegrityCheck,
    ReadOnlyDatabaseError,
    SqliteStore,
    quick_check,
    read_only_reason,
)

__all__ = ["IntegrityCheck", "ReadOnlyDatabaseError", "SqliteStore", "quick_check", "read_only_reason"]
