"""Export and import of knowledge bases between any two stores (SQLite file, Postgres).

Everything of a KB moves: its settings, its ready documents with their extracted text
and sections, their chunks with metadata and vectors (bit for bit), and the original
file bytes (from the data directory on SQLite; into ``kbdesk_document_blobs`` on
Postgres, since the seed's object store is out of reach). Ids are kept. See
:mod:`kbdesk.transfer.core` for batching, idempotence and refusals.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kbdesk.transfer.core import ModelMismatchError, transfer
from kbdesk.transfer.report import TransferEvent, TransferReport

if TYPE_CHECKING:
    from kbdesk.desk import Desk

__all__ = ["ModelMismatchError", "TransferEvent", "TransferReport", "export_kb", "import_kb", "transfer"]


def _open_other(where: str | os.PathLike[str], desk: Desk) -> Desk:
    from kbdesk.desk import open_desk

    return open_desk(where, home=desk.paths.config_dir.parent if _home_is_shared(desk) else None, config=desk.config)


def _home_is_shared(desk: Desk) -> bool:
    # KBDESK_HOME puts config/data/cache under one directory: the other desk shares it
    return desk.paths.config_dir.parent == desk.paths.data_dir.parent


def export_kb(desk: Desk, kb_ref: str, to: str | os.PathLike[str], **options: Any) -> TransferReport:
    """Copy a KB of ``desk`` to the store at ``to`` (a ``postgresql://`` URI or a file)."""
    other = _open_other(to, desk)
    try:
        return transfer(desk, other, kb_ref, audit="source", **options)
    finally:
        other.close()


def import_kb(desk: Desk, source: str | os.PathLike[str], kb_ref: str, **options: Any) -> TransferReport:
    """Copy a KB from the store at ``source`` into ``desk``."""
    other = _open_other(source, desk)
    try:
        return transfer(other, desk, kb_ref, audit="target", **options)
    finally:
        other.close()
