"""Each chunk's vector at its KB's own width (``kbdesk_chunk_vectors``): kept for every
writer, followed through updates, deletes and a re-embedding, and never what decides a
result (a filter whose narrow rows are missing or of another width ranks as before)."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from test_pg_security import count
from test_pg_security import server as server

from ingest_support import configure_provider, write_files
from kbdesk import open_desk
from kbdesk.filters import Filters
from kbdesk.store.postgres import widths
from pg_support import sql

pytestmark = pytest.mark.postgres


def unit_rows(n: int, dims: int, seed: int = 3) -> np.ndarray:
    data = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def load(desk, name: str, data: np.ndarray, per_doc: int = 20) -> None:
    desk.create_kb(name, model_id="m", dimensions=data.shape[1])
    for start in range(0, len(data), per_doc):
        block = data[start : start + per_doc]
        folder = "keep" if (start // per_doc) % 4 == 0 else "other"
        desk.add_document(
            name, f"{folder}/part{start}.txt", [f"row {start + i}" for i in range(len(block))], vectors=block
        )


def widths_of(uri: str, kb_id: str) -> set:
    """The widths of the KB's chunks' narrow rows (None: a chunk with a vector has none)."""
    rows = sql(
        uri,
        f"SELECT DISTINCT vector_dims(v.embedding) FROM kb_chunks c LEFT JOIN {widths.TABLE} v ON v.seq = c.seq "
        "WHERE c.kb_id = %s AND c.embedding IS NOT NULL",
        kb_id,
    )
    return {r[0] for r in rows}


def ranked(desk, name: str, query: np.ndarray, filters=None) -> list[tuple[str, int]]:
    found = desk.search([name], "x", query_vector=query, mode="vector", limit=10, threshold=-1, filters=filters)
    return [(r.source, r.chunk_index) for r in found.results]


def reference(data: np.ndarray, query: np.ndarray, per_doc: int = 20, keep_only: bool = False) -> list[tuple]:
    scores = data @ query
    order = [int(i) for i in np.argsort(-scores, kind="stable")]
    out = []
    for i in order:
        start = i - i % per_doc
        folder = "keep" if (start // per_doc) % 4 == 0 else "other"
        if keep_only and folder != "keep":
            continue
        out.append((f"{folder}/part{start}.txt", i % per_doc))
    return out[:10]


def test_every_chunk_has_its_vector_at_the_kbs_width(pg_desk, pg_uri):
    data = unit_rows(200, 24)
    load(pg_desk, "narrow", data)
    kb = pg_desk.kb("narrow")
    assert widths_of(pg_uri, kb.id) == {24}
    # the same values as the first 24 of the padded column, chunk by chunk, with its document
    differ = sql(
        pg_uri,
        f"SELECT count(*) FROM kb_chunks c JOIN {widths.TABLE} v ON v.seq = c.seq WHERE c.kb_id = %s "
        "AND (v.embedding::text <> subvector(c.embedding, 1, 24)::text OR v.document_id <> c.document_id)",
        kb.id,
    )[0][0]
    assert differ == 0
    docs = [d.id for d in pg_desk.store.list_documents(kb.id)]
    literal = "{" + ",".join(docs) + "}"
    covered = widths.complete_sql(f"'{kb.id}'::uuid", 24).replace("%(docs)s", "%s")
    complete = sql(pg_uri, covered, literal, literal)
    assert complete == [(True,)]  # a filtered exact scan reads these rows
    # a program that knows only the seed's columns writes a chunk: its narrow row follows
    doc = sql(pg_uri, "SELECT document_id FROM kb_chunks WHERE kb_id = %s LIMIT 1", kb.id)[0][0]

    def padded(head):
        return "[" + ",".join(head + ["0"] * (3072 - len(head))) + "]"

    def narrow_of_seed():
        return sql(
            pg_uri,
            f"SELECT v.embedding::text FROM {widths.TABLE} v JOIN kb_chunks c ON c.seq = v.seq "
            "WHERE c.content = 'seed'",
        )

    sql(
        pg_uri,
        "INSERT INTO kb_chunks (kb_id, document_id, chunk_index, content, embedding) VALUES (%s, %s, 999, 'seed', %s)",
        kb.id,
        doc,
        padded(["0.6", "0.8"]),
    )
    assert narrow_of_seed() == [("[" + ",".join(["0.6", "0.8"] + ["0"] * 22) + "]",)]
    sql(pg_uri, "UPDATE kb_chunks SET embedding = %s WHERE content = 'seed'", padded(["0", "1"]))
    assert narrow_of_seed() == [("[" + ",".join(["0", "1"] + ["0"] * 22) + "]",)]
    sql(pg_uri, "UPDATE kb_chunks SET embedding = NULL WHERE content = 'seed'")
    assert narrow_of_seed() == []
    # deleting a document (its chunks go by cascade) takes their narrow rows with them
    before = sql(pg_uri, f"SELECT count(*) FROM {widths.TABLE}")[0][0]
    doc_id = next(d.id for d in pg_desk.store.list_documents(kb.id) if d.filename == "keep/part0.txt")
    pg_desk.delete_document(doc_id)
    assert sql(pg_uri, f"SELECT count(*) FROM {widths.TABLE}")[0][0] == before - 20
    assert widths_of(pg_uri, kb.id) == {24}


def test_rows_without_it_or_at_another_width_rank_exactly_as_before(pg_desk, pg_uri):
    data = unit_rows(400, 16, seed=5)
    load(pg_desk, "mixed", data)
    kb = pg_desk.kb("mixed")
    queries = unit_rows(5, 16, seed=9)
    keep = Filters(path=("keep/**",))
    before = [(ranked(pg_desk, "mixed", q), ranked(pg_desk, "mixed", q, keep)) for q in queries]
    for q, (plain, narrowed) in zip(queries, before, strict=True):
        assert plain == reference(data, q) and narrowed == reference(data, q, keep_only=True)
    # narrow rows as a careless repair leaves them: a third missing, a third at another width
    sql(pg_uri, f"DELETE FROM {widths.TABLE} WHERE kb_id = %s AND mod(seq, 3) = 0", kb.id)
    sql(
        pg_uri,
        f"UPDATE {widths.TABLE} SET embedding = subvector(embedding, 1, 8) WHERE kb_id = %s AND mod(seq, 3) = 1",
        kb.id,
    )
    assert widths_of(pg_uri, kb.id) == {None, 8, 16}
    after = [(ranked(pg_desk, "mixed", q), ranked(pg_desk, "mixed", q, keep)) for q in queries]
    assert after == before


def test_the_migration_fills_the_rows_stored_before_it(pg_desk, pg_uri):
    data = unit_rows(60, 12, seed=11)
    load(pg_desk, "older", data)
    kb = pg_desk.kb("older")
    sql(pg_uri, f"DELETE FROM {widths.TABLE}")
    assert widths_of(pg_uri, kb.id) == {None}
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        widths.install(conn, "public, pg_temp")
    assert widths_of(pg_uri, kb.id) == {12}


def test_a_re_embedded_kb_holds_its_vectors_at_the_new_width(tmp_path, fake_openai, pg_uri, kbdesk_home):
    folder = write_files(tmp_path / "corpus", {"a.txt": "Tides and moons.", "b.txt": "Harbours and ships."})
    configure_provider(fake_openai)
    with open_desk(pg_uri) as desk:
        desk.create_kb("docs", model_id="text-embedding-3-small", provider="fake")
        desk.add("docs", [folder])
        kb = desk.kb("docs")
        assert kb.dimensions == fake_openai.dimensions and widths_of(pg_uri, kb.id) == {kb.dimensions}
        fake_openai.dimensions = 12  # the next model's vectors are wider
        kb, _ = desk.ingestor().reembed("docs", "fake", "nomic-embed-text")
        assert kb.dimensions == 12 and widths_of(pg_uri, kb.id) == {12}
        filtered = desk.search(["docs"], "Harbours and ships.", mode="vector", filters=Filters(path=("b.txt",)))
        assert [r.source for r in filtered.results] == ["b.txt"]


def test_users_search_through_them_and_read_only_those_of_kbs_they_can_read(server):
    alice = server.desk("alice")
    data = unit_rows(80, 8, seed=21)
    load(alice, "Alice vectors", data)
    kb = alice.kb("Alice vectors")
    query = unit_rows(1, 8, seed=22)[0]
    keep = Filters(path=("keep/**",))
    assert ranked(alice, "Alice vectors", query, keep) == reference(data, query, keep_only=True)
    mine = f"SELECT count(*) FROM {widths.TABLE} WHERE kb_id = %s"
    assert count(server.uris["alice"], mine, kb.id) == 80
    assert count(server.uris["eve"], mine, kb.id) == 0


def test_a_kb_at_the_columns_full_width_keeps_no_copy_and_searches_as_before(pg_desk, pg_uri):
    data = unit_rows(12, 3072, seed=31)
    load(pg_desk, "full", data, per_doc=4)
    kb = pg_desk.kb("full")
    assert widths_of(pg_uri, kb.id) == {None}  # nothing narrower to keep
    query = unit_rows(1, 3072, seed=32)[0]
    keep = Filters(path=("keep/**",))
    assert ranked(pg_desk, "full", query, keep) == reference(data, query, per_doc=4, keep_only=True)
