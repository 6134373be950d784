"""A vault-like KB for the faces' filter tests: Markdown notes in folders with tags (as
front matter and inline #tags give them), a PDF, dated a month apart; every one mentions
the roadmap, so only a filter tells them apart. Keyword search: no provider needed."""

from __future__ import annotations

from datetime import UTC, datetime

NOTES = [
    # filename, tags, modified (2026-MM-01)
    ("work/roadmap.md", ["q3", "planning"], 11),
    ("work/plans/roadmap-draft.md", ["q3", "draft"], 10),
    ("work/old-roadmap.md", ["q2"], 6),
    ("home/roadmap.md", ["q3"], 11),
    ("work/roadmap-review.pdf", [], 9),
]
MATCHING = {"work/roadmap.md", "work/plans/roadmap-draft.md"}
"""What ``--tag q3 --path 'work/**'`` lets through."""


def vault_kb(desk, name: str = "notes", *, create: bool = True) -> None:
    """The notes in KB ``name`` (created unless ``create`` is False)."""
    if create:
        desk.create_kb(name)
    for filename, tags, month in NOTES:
        desk.add_document(
            name,
            filename,
            [f"The roadmap: {filename} says what ships and when. " + " ".join(f"#{t}" for t in tags)],
            source_mtime=datetime(2026, month, 1, 12, tzinfo=UTC).timestamp(),
            folder="/vault",
            properties={"tags": tags, "title": filename.rsplit("/", 1)[-1]},
        )
