"""Store scenarios of tests/ whose checks reach into the engine (KB records, cascades,
concurrency), in their Postgres form (SQL placeholders, UUID team ids, pg_indexes).

KB records, search semantics and the ingestion-integrity scenarios run on every engine
from tests/ (the ``engine_desk`` fixture) and are not copied here; keyword ranking
parity: test_pg_keyword.py.
"""

import threading
import time

import numpy as np
import pytest

from helpers import axis
from kbdesk import open_desk
from kbdesk.errors import InvalidInputError, NotFoundError
from pg_support import sql


# ── KB records: team ids are UUIDs here (the rest runs on every engine in tests/test_kb_records.py)
def test_team_scope_needs_a_team(pg_uri, kbdesk_home):
    from kbdesk.config import parse_config

    with pytest.raises(InvalidInputError, match="team id"):
        with open_desk(pg_uri) as desk:
            desk.create_kb("t", scope="team")
    team = sql(pg_uri, "INSERT INTO teams(name) VALUES ('Eng') RETURNING id")[0][0]
    config = parse_config({"identity": {"username": "lead", "teams": {"Eng": "admin"}}})
    with open_desk(pg_uri, config=config) as desk:
        with pytest.raises(NotFoundError, match="no team"):
            desk.create_kb("t", scope="team", team_id="00000000-0000-0000-0000-000000000000")
        kb = desk.create_kb("t", scope="team", team_id=str(team))
        assert kb.scope == "team" and kb.owner_id is None and kb.team_id == str(team)


# ── cascades (tests/test_cascade.py) ──────────────────────────────────────────
def counts(uri):
    tables = [r[0] for r in sql(uri, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    return {t: sql(uri, f'SELECT count(*) FROM "{t}"')[0][0] for t in tables}


def fill(desk, name, dims=8):
    desk.create_kb(name, model_id="m", dimensions=dims)
    return [desk.add_document(name, f"{name}-{d}.txt", [f"{name} document {d} chunk {i} about lighthouses"
                                                        for i in range(4)],
                              vectors=[axis((d + i) % dims) for i in range(4)]) for d in range(3)]


def test_deleting_a_kb_or_a_document_leaves_no_orphan(pg_desk, pg_uri):
    fill(pg_desk, "keep")
    before = counts(pg_uri)
    docs = fill(pg_desk, "doomed")
    kb = pg_desk.kb("doomed")
    channel = sql(pg_uri, "INSERT INTO channels(title) VALUES ('chat') RETURNING id")[0][0]
    sql(pg_uri, "INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", channel, kb.id)
    pg_desk.store.vectors.ensure(kb.id, 8, force=True)  # an index exists and must go with the KB
    assert sql(pg_uri, "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'kbvec_%%'")[0][0] == 1
    stored = pg_desk.files_dir / "kb" / kb.id
    stored.mkdir(parents=True)
    (stored / "x_file.txt").write_text("original bytes")
    pg_desk.delete_document(docs[0].id)
    assert sql(pg_uri, "SELECT count(*) FROM kb_chunks WHERE document_id = %s", docs[0].id)[0][0] == 0
    hits = pg_desk.search(["doomed"], "x", query_vector=axis(0), mode="vector", limit=20, threshold=-1).results
    assert len(hits) == 8 and all(h.source != docs[0].filename for h in hits)

    pg_desk.delete_kb("doomed")
    after = counts(pg_uri)
    assert after.pop("kbdesk_audit_log") - before.pop("kbdesk_audit_log") == 1 + 3 + 1 + 1
    after.pop("channels"), before.pop("channels")
    assert after == before
    assert sql(pg_uri, "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'kbvec_%%'")[0][0] == 0
    assert not stored.exists()
    assert pg_desk.search(["keep"], "lighthouses", mode="keyword").results
    assert pg_desk.search(["keep"], "x", query_vector=axis(0), mode="vector").results


# ── concurrency (tests/test_concurrency.py) ──────────────────────────────────
def test_two_writers_and_a_reader(pg_uri, kbdesk_home):
    desk = open_desk(pg_uri)
    desk.create_kb("shared", model_id="m", dimensions=16)
    errors: list[BaseException] = []
    written = {"a": 0, "b": 0}
    reads = [0]
    stop = time.monotonic() + 2.0

    def writer(tag):
        rng = np.random.default_rng(hash(tag) % 2**32)
        try:
            while time.monotonic() < stop:
                n = int(rng.integers(1, 20))
                doc = desk.add_document("shared", f"{tag}-{written[tag]}.txt",
                                        [f"{tag} chunk {i} of the shared corpus" for i in range(n)],
                                        vectors=rng.standard_normal((n, 16)))
                written[tag] += 1
                if written[tag] % 5 == 0:
                    desk.delete_document(doc.id)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def reader():
        rng = np.random.default_rng(3)
        try:
            while time.monotonic() < stop:
                desk.search(["shared"], "shared corpus", query_vector=rng.standard_normal(16))
                reads[0] += 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=("a",)), threading.Thread(target=writer, args=("b",)),
               threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert written["a"] > 5 and written["b"] > 5 and reads[0] > 5
    with open_desk(pg_uri) as other:  # another process's view is consistent
        kb = other.kb("shared")
        docs = sql(pg_uri, "SELECT count(*) FROM kb_documents")[0][0]
        chunks = sql(pg_uri, "SELECT count(*) FROM kb_chunks")[0][0]
        assert (kb.document_count, kb.chunk_count) == (docs, chunks)
        assert docs == sum(w - w // 5 for w in written.values())
    # threads that ended gave their connections back to the idle pool instead of piling up
    assert len(desk.store._open) <= 4
    desk.close()


def test_a_dropped_connection_is_replaced(pg_desk, pg_uri):
    pg_desk.create_kb("survivor")
    sql(pg_uri, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()")
    with pytest.raises(Exception):  # the next statement on the dead connection fails…
        pg_desk.list_kbs()
    assert [kb.name for kb in pg_desk.list_kbs()] == ["survivor"]  # …and the one after reconnects
