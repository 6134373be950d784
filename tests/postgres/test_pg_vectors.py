"""Vectors on Postgres: zero padding, the per-KB HNSW index (used, and accurate), NUL bytes."""

import numpy as np
import pytest

from kbdesk.models import ChunkInput
from pg_support import sql


def clustered(n, dims, seed=7, clusters=40):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dims))
    data = centres[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, dims))
    queries = centres[rng.integers(0, clusters, 40)] + 0.35 * rng.standard_normal((40, dims))
    return data, queries


def load(desk, name, data, per_doc=250):
    desk.create_kb(name, model_id="m", dimensions=data.shape[1])
    for start in range(0, len(data), per_doc):
        block = data[start : start + per_doc]
        desk.add_document(
            name, f"part{start}.txt", [f"{name} vector {start + i}" for i in range(len(block))], vectors=block
        )
    return desk.kb(name)


def test_the_index_is_built_used_and_accurate(pg_desk, pg_uri):
    store = pg_desk.store
    store.vectors.min_rows = 1000  # the default is 5000; a smaller KB keeps the test quick
    data, queries = clustered(3000, 96)
    small = load(pg_desk, "small", data[:200])  # under the size: exact search, no index
    kb = load(pg_desk, "big", data)  # the ingest that crosses the size builds the index
    names = {r[0] for r in sql(pg_uri, "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'kbvec_%%'")}
    assert names == {f"kbvec_{kb.id.replace('-', '')}_96"}
    definition = sql(pg_uri, "SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'kbvec_%%'")[0][0]
    assert "hnsw" in definition and "subvector(embedding, 1, 96)" in definition and "vector_cosine_ops" in definition
    q = queries[0] / np.linalg.norm(queries[0])
    plan = store.vectors.explain(kb.id, 96, q.astype(np.float32), 10)
    assert f"Index Scan using kbvec_{kb.id.replace('-', '')}_96" in plan, plan
    assert "Index Scan using kbvec" not in store.vectors.explain(small.id, 96, q.astype(np.float32), 10)

    recalls = []
    for query in queries:
        unit = (query / np.linalg.norm(query)).astype(np.float32)
        approx = store.vectors.search(kb.id, 96, unit, 10)
        exact = store.vectors.search(kb.id, 96, unit, 10, exact=True)
        truth = data @ unit / np.linalg.norm(data, axis=1)  # and exact is exact
        assert [s for s, _ in exact][:3] and exact[0][1] == pytest.approx(float(truth.max()), abs=1e-5)
        recalls.append(len({s for s, _ in approx} & {s for s, _ in exact}) / 10)
    assert np.mean(recalls) >= 0.95, np.mean(recalls)

    # the index follows new rows: a document added later is found through it
    pg_desk.add_document("big", "late.txt", ["the late arrival"], vectors=[queries[1]])
    hit = pg_desk.search(["big"], "x", query_vector=queries[1], mode="vector", limit=1).results[0]
    assert hit.source == "late.txt" and hit.similarity == pytest.approx(1.0, abs=1e-5)


def test_wide_models_are_indexed_as_halfvec(pg_desk, pg_uri):
    data, queries = clustered(300, 2304, clusters=10)
    kb = load(pg_desk, "wide", data, per_doc=150)
    assert pg_desk.store.vectors.ensure(kb.id, 2304, force=True)
    definition = sql(pg_uri, "SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'kbvec_%%'")[0][0]
    assert "halfvec(2304)" in definition and "halfvec_cosine_ops" in definition
    q = (queries[0] / np.linalg.norm(queries[0])).astype(np.float32)
    assert "Index Scan using kbvec" in pg_desk.store.vectors.explain(kb.id, 2304, q, 10)
    approx = pg_desk.store.vectors.search(kb.id, 2304, q, 5)
    exact = pg_desk.store.vectors.search(kb.id, 2304, q, 5, exact=True)
    # half precision picks the candidates; the scores are exact float32 cosine either way
    assert dict(approx) == pytest.approx({s: v for s, v in exact if s in dict(approx)}, abs=1e-9)


def test_vectors_are_stored_zero_padded_at_3072(pg_desk, pg_uri):
    pg_desk.create_kb("pad", model_id="m", dimensions=3)
    pg_desk.add_document("pad", "a.txt", ["three numbers"], vectors=[[3.0, 4.0, 0.0]])
    dims, head, tail = sql(
        pg_uri,
        "SELECT vector_dims(embedding), subvector(embedding, 1, 3)::text, "
        "subvector(embedding, 4, 3069)::text FROM kb_chunks",
    )[0]
    assert dims == 3072 and head == "[0.6,0.8,0]" and set(tail.strip("[]").split(",")) == {"0"}
    assert sql(pg_uri, "SELECT embedding_config->>'dimensions' FROM knowledge_bases")[0][0] == "3"


def test_nul_bytes_and_lone_surrogates_never_fail_a_write(pg_desk, pg_uri):
    kb = pg_desk.create_kb("dirty")
    doc = pg_desk.add_document(
        "dirty",
        "scan.pdf",
        [
            ChunkInput("page one\x00 text with\x00 NULs", metadata={"page": 1, "note\x00": "a\x00b", "bad": "\ud800x"}),
            ChunkInput("lone \udc80 surrogate"),
        ],
        extracted_text="raw\x00 text",
    )
    rows = sql(pg_uri, "SELECT content, metadata FROM kb_chunks ORDER BY chunk_index")
    assert rows[0] == ("page one text with NULs", {"page": 1, "note": "ab", "bad": "\ufffdx"})
    assert rows[1][0] == "lone \ufffd surrogate"
    assert pg_desk.search(["dirty"], "NULs").results[0].source == "scan.pdf"
    # extracted text through the ingestion lifecycle: sections move with the removed NULs
    new = pg_desk.store.create_document(kb.id, "notes.txt", size_bytes=10)
    pg_desk.store.set_document_status(
        new.id, "chunking", extracted_text="ab\x00\x00cd\x00ef", sections=[(0, 6, {"page": 1}), (6, 9, {"page": 2})]
    )
    assert pg_desk.store.document_sections(new.id) == [("abcd", {"page": 1}), ("ef", {"page": 2})]
    pg_desk.store.set_document_status(new.id, "error", error="bad\x00 byte")
    assert pg_desk.store.get_document(new.id).error == "bad byte"
    assert doc.status == "ready"
    # a giant chunk (a tsvector stops at 1 MB) and NaN in metadata (jsonb has none) do not fail either
    giant = " ".join(f"w{i}q" for i in range(400_000)) + " needle"
    pg_desk.add_document("dirty", "giant.txt", [giant, ChunkInput("small", metadata={"score": float("nan")})])
    assert pg_desk.search(["dirty"], "w12q").results[0].source == "giant.txt"
    assert sql(pg_uri, "SELECT metadata FROM kb_chunks WHERE content = 'small'")[0][0] == {"score": None}
