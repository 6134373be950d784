"""Where kbdesk keeps its files.

Everything is computed on call, never at import time. ``KBDESK_HOME`` moves every
path (config, data, cache) under one directory; ``KBDESK_DB`` (or ``--db``) selects
another database file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "kbdesk"
DB_FILENAME = "kbdesk.db"


@dataclass(frozen=True)
class Paths:
    config_dir: Path
    data_dir: Path
    cache_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def default_db(self) -> Path:
        return self.data_dir / DB_FILENAME

    def files_dir(self, db_path: Path | None = None) -> Path:
        """Directory holding original document bytes (``kb/{kb_id}/{doc_id}_{name}``).

        It sits beside the database file, so another ``--db`` keeps its own files.
        """
        db = db_path or self.default_db
        if db.resolve() == self.default_db.resolve():
            return self.data_dir
        return db.parent / (db.name + ".files")


def get_paths(home: str | os.PathLike[str] | None = None) -> Paths:
    """Return the paths in force: ``home`` argument, then ``KBDESK_HOME``, then platformdirs."""
    root = home if home is not None else os.environ.get("KBDESK_HOME")
    if root:
        base = Path(root).expanduser().absolute()
        return Paths(config_dir=base / "config", data_dir=base / "data", cache_dir=base / "cache")
    return Paths(
        config_dir=platformdirs.user_config_path(APP_NAME, appauthor=False),
        data_dir=platformdirs.user_data_path(APP_NAME, appauthor=False),
        cache_dir=platformdirs.user_cache_path(APP_NAME, appauthor=False),
    )


def resolve_db(paths: Paths, db: str | os.PathLike[str] | None = None) -> Path:
    """The database file: explicit ``db``, then ``KBDESK_DB``, then the default."""
    chosen = db if db is not None else os.environ.get("KBDESK_DB")
    if chosen:
        return Path(chosen).expanduser().absolute()
    return paths.default_db
