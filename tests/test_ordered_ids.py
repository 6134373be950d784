"""Chunk ids are time-ordered UUIDs (version 7): unique, valid UUIDs on both engines, and
ascending in the order chunks are written, so their unique index grows at one end."""

from __future__ import annotations

import time
import uuid

from kbdesk.store.ids import ordered_uuids


def test_ordered_uuids_are_version_7_unique_and_ascending():
    before = time.time_ns() // 1_000_000
    ids = ordered_uuids(20_000)
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == 20_000
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in ids)
    assert [str(u) for u in ids] == sorted(str(u) for u in ids)
    assert all(before <= u.int >> 80 <= after for u in (ids[0], ids[-1]))  # the millisecond they were made
    assert len({u.int & ((1 << 62) - 1) for u in ordered_uuids(1)[:1] + ordered_uuids(1)}) == 2  # random per call


def test_a_round_of_chunks_gets_ascending_ids(tmp_path):
    from kbdesk import open_desk

    with open_desk(home=tmp_path) as desk:
        desk.create_kb("notes")
        desk.add_document("notes", "a.md", [f"chunk {i} about harbours" for i in range(50)])
        desk.add_document("notes", "b.md", [f"chunk {i} about tides" for i in range(50)])
        ids = [row[0] for row in desk.store.connection().execute("SELECT id FROM kb_chunks ORDER BY seq")]
        assert len(ids) == 100 and ids[:50] == sorted(ids[:50]) and ids[50:] == sorted(ids[50:])
        assert all(uuid.UUID(i).version == 7 for i in ids)
