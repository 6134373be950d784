"""What one ingestion run did: :class:`IngestReport`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class IngestReport:
    """What one ``add`` (or resume, or rebuild) did."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)  # left for the next add or resume
    # failed before for a reason of the file's own and unchanged since: not tried again
    known_failures: list[tuple[str, str]] = field(default_factory=list)
    by_other: list[str] = field(default_factory=list)  # indexed meanwhile by another kbdesk run
    missing: list[str] = field(default_factory=list)  # paths given that do not exist
    embedded_chunks: int = 0
    cached_chunks: int = 0
    embedding_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "resumed": self.resumed,
            "failed": [{"file": f, "error": e} for f, e in self.failed],
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "removed": self.removed,
            "cancelled": self.cancelled,
            "known_failures": [{"file": f, "error": e} for f, e in self.known_failures],
            "by_other": self.by_other,
            "missing": self.missing,
            "embedded_chunks": self.embedded_chunks,
            "cached_chunks": self.cached_chunks,
            "embedding_calls": self.embedding_calls,
        }
