"""A vault of Markdown notes (front matter and inline #tags, as Obsidian keeps them):
indexed, its notes carry their tags, title and path, and a search narrowed by tag and
folder returns only the notes inside — on every engine."""

from __future__ import annotations

import os
from pathlib import Path

from engine_checks import stored_facts
from ingest_support import write_files
from kbdesk.filters import Filters
from kbdesk.ingest.front_matter import inline_tags, split_front_matter

NOTES = {
    "work/roadmap.md": "---\ntitle: Q3 roadmap\ntags: [q3, planning]\ndate: 2026-07-01\n---\n"
    "# Roadmap\n\nThe roadmap for the quarter: search filters, then sync.\n",
    "work/infra/roadmap-infra.md": "# Infra roadmap\n\nThe infra roadmap #q3 #infra: move the database.\n",
    "work/retro.md": "---\ntags: q4, retro\n---\nA roadmap retro, looking back at #q4.\n",
    "home/garden.md": "---\ntags:\n  - q3\n  - garden\n---\nThe garden roadmap for the summer.\n",
    "work/code.md": "Roadmap notes with code:\n\n```\n#q3 is not a tag in code\n```\n"
    "and `#q3` nor http://example.org/page#q3 either.\n",
}


def write_vault(root: Path) -> Path:
    for rel, text in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_vault_search_narrowed_by_tag_and_folder(engine_desk, tmp_path):
    desk = engine_desk
    vault = write_vault(tmp_path / "vault")
    desk.create_kb("notes")
    report = desk.add("notes", [vault])
    assert report.failed == []

    response = desk.search(["notes"], "roadmap", filters=Filters(tags=("q3",), path=("work/**",)))
    assert sorted(r.source for r in response.results) == ["work/infra/roadmap-infra.md", "work/roadmap.md"]

    everywhere = desk.search(["notes"], "roadmap", filters=Filters(tags=("q3",)))
    assert sorted(r.source for r in everywhere.results) == [
        "home/garden.md",
        "work/infra/roadmap-infra.md",
        "work/roadmap.md",
    ]
    # the front matter is metadata, not text: its lines are not searched as prose
    assert desk.search(["notes"], "planning", mode="keyword").results == []
    assert all("title:" not in r.content for r in desk.search(["notes"], "roadmap", limit=10).results)


def test_a_vault_note_keeps_its_front_matter_as_document_metadata(engine_desk, tmp_path):
    desk = engine_desk
    vault = write_vault(tmp_path / "vault")
    desk.create_kb("notes")
    desk.add("notes", [vault])
    docs = {d.path: d for d in desk.documents("notes")}
    roadmap = docs["work/roadmap.md"]
    assert (roadmap.title, roadmap.tags, roadmap.file_type) == ("Q3 roadmap", ["q3", "planning"], "md")
    assert roadmap.properties == {"date": "2026-07-01"}
    assert roadmap.source_mtime == os.stat(vault / "work/roadmap.md").st_mtime
    assert docs["work/infra/roadmap-infra.md"].tags == ["q3", "infra"]
    assert docs["work/retro.md"].tags == ["q4", "retro"]
    assert docs["home/garden.md"].tags == ["q3", "garden"]
    assert docs["work/code.md"].tags == []
    assert stored_facts(desk, "notes")["work/roadmap.md"] == ("md", ["q3", "planning"], "Q3 roadmap")
    if desk.store.kind == "sqlite":  # a team server keeps no paths
        assert roadmap.folder == str(vault)


def test_front_matter_is_read_safely_and_never_executed():
    fields, body = split_front_matter(
        "---\ntitle: 'A: b'\ntags: [one, \"two three\"]\nauthor:\n  - Ann\n  - Bob\n"
        "run: !!python/object/apply:os.system ['false']\nnested:\n  key: value\nnotes: |\n  long\n---\nBody\n"
    )
    assert fields == {"title": "A: b", "tags": ["one", "two three"], "author": "Ann, Bob"}
    assert body == "Body\n"
    assert split_front_matter("No front matter\n---\n") == ({}, "No front matter\n---\n")
    assert inline_tags("# Heading\n#Start of line, mid #mid-tag, #nested/tag, #1984, a#b, &#38; (#paren)") == [
        "start",
        "mid-tag",
        "nested/tag",
        "paren",
    ]


NESTED = {
    "infra.md": "---\ntags: [work/infra]\n---\nThe roadmap of the servers.\n",
    "db.md": "The database roadmap #work/infra/db and #Home.\n",
    "work.md": "---\ntags: work\n---\nThe roadmap of the team.\n",
    "workshop.md": "The workshop roadmap #workshop.\n",
}


def test_a_nested_tag_counts_as_its_parents_but_a_parent_not_as_its_children(engine_desk, tmp_path):
    desk = engine_desk
    vault = write_files(tmp_path / "nested", NESTED)
    desk.create_kb("notes")
    assert desk.add("notes", [vault]).failed == []

    def found(**filters):
        response = desk.search(["notes"], "roadmap", mode="keyword", limit=10, filters=filters)
        return sorted(r.source for r in response.results)

    assert found(tags="work") == ["db.md", "infra.md", "work.md"]  # not workshop: a parent is a whole part
    assert found(tags="#Work/Infra/") == ["db.md", "infra.md"]
    assert found(tags="work/infra/db") == ["db.md"]
    assert found(tags="work/inf") == []
    assert found(any_tags="workshop,home") == ["db.md", "workshop.md"]
    assert found(tags="work,home") == ["db.md"]
    # what is stored and shown is the tag as written; only the filter counts parents
    assert {d.path: d.tags for d in desk.documents("notes")}["db.md"] == ["work/infra/db", "home"]
