"""Choosing a SQLite driver that can load sqlite-vec, and saying why.

The standard library's ``sqlite3`` is used when it can load extensions; otherwise
``sqlean`` (the sqlean-py package, a drop-in ``sqlite3`` built with extension loading).
When neither can load sqlite-vec, or the user asked for it, vectors are searched by the
numpy backend instead.
"""

from __future__ import annotations

import sqlite3 as _stdlib_sqlite3
from dataclasses import dataclass
from types import ModuleType

from kbdesk.errors import StoreError


@dataclass(frozen=True)
class Driver:
    """The SQLite module in use and what it can do."""

    module: ModuleType
    name: str  # "sqlite3" or "sqlean"
    vec_loaded: bool  # sqlite-vec loads on this driver's connections
    vec_version: str | None
    backend: str  # "sqlite-vec" or "numpy"
    reason: str  # one line: why this backend

    @property
    def sqlite_version(self) -> str:
        return self.module.sqlite_version


def _can_load_extensions(module: ModuleType) -> bool:
    try:
        conn = module.connect(":memory:")
    except Exception:  # noqa: BLE001  # pragma: no cover - a broken build
        return False
    try:
        return hasattr(conn, "enable_load_extension")
    finally:
        conn.close()


def _try_vec(module: ModuleType) -> tuple[str | None, str]:
    """Return (sqlite-vec version, '') or (None, reason it failed)."""
    try:
        import sqlite_vec  # type: ignore[import-untyped]  # no type information shipped
    except ImportError:
        return None, "the sqlite-vec package is not installed"
    conn = module.connect(":memory:")
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        return conn.execute("select vec_version()").fetchone()[0], ""
    except Exception as exc:  # noqa: BLE001 - any failure means "not loadable", and says why
        return None, f"sqlite-vec failed to load: {exc}"
    finally:
        conn.close()


def load_extensions(conn: _stdlib_sqlite3.Connection, driver: Driver) -> None:
    """Load sqlite-vec into a fresh connection made with ``driver``."""
    if not driver.vec_loaded:
        return
    import sqlite_vec

    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)


def choose_driver(requested: str = "auto") -> Driver:
    """Pick the driver and vector backend for ``requested`` (auto / sqlite-vec / numpy).

    sqlite-vec is loaded whenever it can be, even when numpy searches, so that a
    database indexed with sqlite-vec stays fully usable (its ``vec0`` tables can be
    updated and dropped).
    """
    candidates: list[tuple[str, ModuleType]] = []
    notes: list[str] = []
    if _can_load_extensions(_stdlib_sqlite3):
        candidates.append(("sqlite3", _stdlib_sqlite3))
    else:
        notes.append("the standard library's sqlite3 cannot load extensions")
    try:
        import sqlean  # type: ignore[import-untyped]  # no type information shipped

        candidates.append(("sqlean", sqlean))
    except ImportError:
        notes.append("sqlean-py is not installed")

    for name, module in candidates:
        version, why = _try_vec(module)
        if version:
            via = name + (f" ({notes[0]})" if notes else "")
            if requested == "numpy":
                return Driver(
                    module,
                    name,
                    True,
                    version,
                    "numpy",
                    "numpy requested (vector.backend or KBDESK_VECTOR_BACKEND); "
                    f"sqlite-vec {version} loaded through {via} keeps its index in step",
                )
            return Driver(module, name, True, version, "sqlite-vec", f"sqlite-vec {version} loaded through {via}")
        notes.append(f"{name}: {why}")

    if requested == "sqlite-vec":
        raise StoreError("vector backend 'sqlite-vec' was requested but cannot be loaded: " + "; ".join(notes))
    prefix = "numpy requested" if requested == "numpy" else "numpy fallback"
    name, module = candidates[-1] if candidates else ("sqlite3", _stdlib_sqlite3)
    return Driver(module, name, False, None, "numpy", f"{prefix}: " + "; ".join(notes))
