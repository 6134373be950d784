"""Each chunk's vector at its KB's own width (``embedding_real``): filled for every writer,
followed through a re-embedding, never settable apart from ``embedding``, and never what
decides a result (a row without it, or with another width, ranks as before)."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

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
    rows = sql(uri, f"SELECT DISTINCT vector_dims({widths.COLUMN}) FROM kb_chunks WHERE kb_id = %s", kb_id)
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


def test_every_row_holds_its_vector_at_the_kbs_width(pg_desk, pg_uri):
    data = unit_rows(200, 24)
    load(pg_desk, "narrow", data)
    kb = pg_desk.kb("narrow")
    assert widths_of(pg_uri, kb.id) == {24}
    # the same values as the first 24 of the padded column, row by row
    differ = sql(
        pg_uri,
        f"SELECT count(*) FROM kb_chunks WHERE kb_id = %s AND {widths.COLUMN}::text <> "
        "subvector(embedding, 1, 24)::text",
        kb.id,
    )[0][0]
    assert differ == 0
    # a program that knows only the seed's columns writes a chunk: the trigger fills it in
    doc = sql(pg_uri, "SELECT document_id FROM kb_chunks WHERE kb_id = %s LIMIT 1", kb.id)[0][0]
    padded = "[" + ",".join(["0.6", "0.8"] + ["0"] * 3070) + "]"
    sql(
        pg_uri,
        "INSERT INTO kb_chunks (kb_id, document_id, chunk_index, content, embedding) VALUES (%s, %s, 999, 'seed', %s)",
        kb.id,
        doc,
        padded,
    )
    head = sql(pg_uri, f"SELECT {widths.COLUMN}::text FROM kb_chunks WHERE content = 'seed'")[0][0]
    assert head == "[" + ",".join(["0.6", "0.8"] + ["0"] * 22) + "]"
    # and an update of the vector moves it along, whatever the writer put in the column
    sql(
        pg_uri,
        f"UPDATE kb_chunks SET embedding = %s, {widths.COLUMN} = '[1,2,3]' WHERE content = 'seed'",
        "[" + ",".join(["0", "1"] + ["0"] * 3070) + "]",
    )
    head = sql(pg_uri, f"SELECT {widths.COLUMN}::text FROM kb_chunks WHERE content = 'seed'")[0][0]
    assert head == "[" + ",".join(["0", "1"] + ["0"] * 22) + "]"


def test_rows_without_it_or_at_another_width_rank_exactly_as_before(pg_desk, pg_uri):
    data = unit_rows(400, 16, seed=5)
    load(pg_desk, "mixed", data)
    kb = pg_desk.kb("mixed")
    queries = unit_rows(5, 16, seed=9)
    keep = Filters(path=("keep/**",))
    before = [(ranked(pg_desk, "mixed", q), ranked(pg_desk, "mixed", q, keep)) for q in queries]
    for q, (plain, narrowed) in zip(queries, before, strict=True):
        assert plain == reference(data, q) and narrowed == reference(data, q, keep_only=True)
    # rows as an older kbdesk or a careless repair leaves them: a third without the
    # column, a third at another width (the owner, with the trigger switched off)
    sql(pg_uri, f"ALTER TABLE kb_chunks DISABLE TRIGGER {widths.TRIGGER}")
    try:
        sql(pg_uri, f"UPDATE kb_chunks SET {widths.COLUMN} = NULL WHERE kb_id = %s AND mod(seq, 3) = 0", kb.id)
        sql(
            pg_uri,
            f"UPDATE kb_chunks SET {widths.COLUMN} = subvector(embedding, 1, 8) WHERE kb_id = %s AND mod(seq, 3) = 1",
            kb.id,
        )
    finally:
        sql(pg_uri, f"ALTER TABLE kb_chunks ENABLE TRIGGER {widths.TRIGGER}")
    assert widths_of(pg_uri, kb.id) == {None, 8, 16}
    after = [(ranked(pg_desk, "mixed", q), ranked(pg_desk, "mixed", q, keep)) for q in queries]
    assert after == before


def test_the_migration_fills_the_rows_stored_before_it(pg_desk, pg_uri):
    data = unit_rows(60, 12, seed=11)
    load(pg_desk, "older", data)
    kb = pg_desk.kb("older")
    sql(pg_uri, f"ALTER TABLE kb_chunks DISABLE TRIGGER {widths.TRIGGER}")
    sql(pg_uri, f"UPDATE kb_chunks SET {widths.COLUMN} = NULL")
    sql(pg_uri, f"ALTER TABLE kb_chunks ENABLE TRIGGER {widths.TRIGGER}")
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
