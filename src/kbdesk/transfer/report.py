"""What an export or import tells its caller: progress events and the final report."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class TransferEvent:
    """Progress of one transfer: ``plan`` (totals known), ``batch`` (one batch committed),
    ``done``. Counts cover the documents and chunks that need copying this run."""

    kind: str
    kb: str
    docs_done: int = 0
    docs_total: int = 0
    chunks_done: int = 0
    chunks_total: int = 0
    detail: str = ""


TransferSink = Callable[[TransferEvent], None]


def ignore(event: TransferEvent) -> None:
    return None


@dataclass
class TransferReport:
    """What a run did. ``changed`` is False when the target already held the same KB."""

    kb: str
    kb_id: str
    source: str
    target: str
    kb_created: bool = False
    kb_updated: list[str] = field(default_factory=list)
    copied_documents: int = 0
    copied_chunks: int = 0
    copied_files: int = 0
    unchanged_documents: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)  # not ready, or no vector where one is needed
    extra_on_target: int = 0  # documents the target has and the source does not (kept unless prune)
    pruned_documents: int = 0
    batches: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.kb_created or self.kb_updated or self.copied_documents or self.pruned_documents)

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "changed": self.changed,
            "chunks_per_second": round(self.copied_chunks / self.seconds, 1) if self.seconds else None,
        }

    def summary(self) -> str:
        if not self.changed:
            return (
                f"nothing to do: '{self.kb}' on {self.target} already holds the same "
                f"{self.unchanged_documents} documents"
            )
        parts = [
            f"{self.copied_documents} documents ({self.copied_chunks} chunks) copied",
            f"{self.unchanged_documents} unchanged",
        ]
        if self.kb_created:
            parts.insert(0, "knowledge base created")
        if self.kb_updated:
            parts.append("updated " + ", ".join(self.kb_updated))
        if self.pruned_documents:
            parts.append(f"{self.pruned_documents} removed")
        return f"'{self.kb}' → {self.target}: " + ", ".join(parts)


def fingerprint(summary: dict[str, Any]) -> str:
    """What makes two copies of a document the same: name, bytes hash, status, and each
    chunk's index, text hash and whether it has a vector (a chunk's vector only changes
    with the KB's model, which is compared separately)."""
    body = [
        summary["filename"],
        summary.get("content_hash"),
        summary["status"],
        [list(c) for c in sorted(summary["chunks"])],
    ]
    return hashlib.sha256(json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
