"""The binary-quantised path for large KBs: close to exact, fresh after writes, same shape."""

import numpy as np
import pytest

from helpers import sqlite_store
from kbdesk import open_desk
from kbdesk.config import parse_config
from kbdesk.errors import ConfigError
from kbdesk.store import keywords
from kbdesk.store.sqlite import lookup as sqlite_lookup
from kbdesk.store.sqlite import quantized
from kbdesk.store.sqlite.quantized import asymmetric_scores, hamming, nearest, sign_bits


def clustered(n, dims, seed=3, centres=80, spread=0.8):
    """Unit vectors around a few centres: the neighbourhoods of real text embeddings."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, dims)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    noise = rng.standard_normal((n, dims)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    x = c[rng.integers(0, centres, n)] + spread * noise
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def queries(vectors, count, seed=5):
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((count, vectors.shape[1]))
    q = vectors[rng.integers(0, len(vectors), count)] + 0.5 * noise / np.linalg.norm(noise, axis=1, keepdims=True)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def config(quantize_above, oversample=10):
    return parse_config({"vector": {"quantize_above": quantize_above, "oversample": oversample}})


def build(db, tmp_path, vectors, *, quantize_above, backend="numpy", per_doc=500):
    desk = open_desk(db, home=tmp_path / "home", config=config(quantize_above), backend=backend)
    desk.create_kb("big", model_id="m", dimensions=vectors.shape[1])
    for start in range(0, len(vectors), per_doc):
        desk.add_document(
            "big",
            f"part{start}.txt",
            [f"chunk {i}" for i in range(start, start + per_doc)],
            vectors=vectors[start : start + per_doc],
        )
    return desk


def top(desk, q, limit=10):
    return desk.search(["big"], "", query_vector=q, mode="vector", limit=limit, threshold=-1.0)


def bits_rows(desk):
    return desk.store.connection().execute("SELECT count(*) FROM kb_vector_bits").fetchone()[0]


# ── the primitives against brute force ─────────────────────────────────────────
@pytest.mark.parametrize("dims", [8, 64, 100, 384])
def test_hamming_matches_a_bit_by_bit_count(dims, monkeypatch):
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((1500, dims)).astype(np.float32)
    q = rng.standard_normal(dims).astype(np.float32)
    codes = sign_bits(x)
    assert codes.shape == (1500, -(-dims // 64) * 8)
    expected = ((x > 0) != (q > 0)).sum(axis=1)
    words = np.ascontiguousarray(codes.view(np.uint64).T)
    qw = sign_bits(q[None])[0].view(np.uint64)
    assert (hamming(words, qw, threads=1) == expected).all()
    monkeypatch.setattr(quantized, "PARALLEL_ABOVE", 10)
    monkeypatch.setattr(quantized, "BLOCK", 256)
    assert (hamming(words, qw, threads=3) == expected).all()  # split across threads, several blocks each


def test_nearest_takes_the_smallest_distances_and_breaks_ties_by_position():
    d = np.array([5, 1, 3, 1, 2, 3, 3, 0], dtype=np.uint16)
    assert sorted(nearest(d, 3).tolist()) == [1, 3, 7]
    assert sorted(nearest(d, 5).tolist()) == [1, 2, 3, 4, 7]  # 3 appears three times: first one kept
    assert sorted(nearest(d, 20).tolist()) == list(range(8))


@pytest.mark.parametrize("dims", [10, 64, 384])
def test_asymmetric_scores_sum_the_query_where_bits_are_set(dims):
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((300, dims)).astype(np.float32)
    q = rng.standard_normal(dims).astype(np.float32)
    got = asymmetric_scores(sign_bits(x), q)
    assert np.allclose(got, ((x > 0) * q).sum(axis=1), atol=1e-4)
    # the same order as q . sign(x)
    assert (np.argsort(-got) == np.argsort(-(np.where(x > 0, 1, -1) @ q))).mean() > 0.99


# ── through the store ──────────────────────────────────────────────────────────
def test_quantised_recall_at_10_against_exact_search(tmp_path):
    vectors = clustered(6000, 128)
    desk = build(tmp_path / "q.db", tmp_path, vectors, quantize_above=1000)
    kb = desk.kb("big")
    assert sqlite_store(desk).vectors.uses_quantized(desk.store, kb.id)
    recalls = []
    for q in queries(vectors, 40):
        exact = {f"chunk {i}" for i in np.argsort(-(vectors @ q))[:10]}
        got = [r.content for r in top(desk, q).results]
        assert len(got) == 10
        recalls.append(len(exact & set(got)) / 10)
    assert np.mean(recalls) >= 0.95, np.mean(recalls)
    assert bits_rows(desk) == 6000
    desk.close()


def test_results_have_the_same_shape_and_exact_similarities(tmp_path):
    vectors = clustered(3000, 64)
    db = tmp_path / "shape.db"
    build(db, tmp_path, vectors, quantize_above=1000).close()
    q = queries(vectors, 1)[0]
    with open_desk(db, home=tmp_path / "home", config=config(1000), backend="numpy") as desk:
        quant = top(desk, q)
    with open_desk(db, home=tmp_path / "home", config=config(0), backend="numpy") as desk:
        kb = desk.kb("big")
        assert not sqlite_store(desk).vectors.uses_quantized(desk.store, kb.id)
        exact = top(desk, q)
    assert quant.to_dict().keys() == exact.to_dict().keys()
    assert [r.to_dict().keys() for r in quant.results] == [r.to_dict().keys() for r in exact.results]
    assert [type(v) for v in quant.results[0].to_dict().values()] == [
        type(v) for v in exact.results[0].to_dict().values()
    ]
    sims = {r.content: r.similarity for r in exact.results}
    for r in quant.results:  # rescored exactly: the same cosine as exact search reports
        assert r.similarity == pytest.approx(float(vectors[int(r.content.split()[1])] @ q), abs=1e-5)
        if r.content in sims:
            assert r.similarity == pytest.approx(sims[r.content], abs=1e-6)
    assert [r.similarity for r in quant.results] == sorted((r.similarity for r in quant.results), reverse=True)


@pytest.mark.parametrize("backend", ["numpy", "sqlite-vec"])
def test_fresh_after_writes_deletes_and_raw_sql(tmp_path, backend):
    dims = 32
    vectors = clustered(2000, dims)
    desk = build(tmp_path / f"fresh-{backend}.db", tmp_path, vectors, quantize_above=1000, backend=backend)
    target = np.zeros(dims, dtype=np.float32)
    target[3] = 1.0
    top(desk, target)  # loads the codes (and writes every bit row)
    assert bits_rows(desk) == 2000

    # a new document: its bits are written with it, and the next search sees it
    desk.add_document("big", "late.txt", ["the late arrival"], vectors=[target])
    assert bits_rows(desk) == 2001
    assert top(desk, target).results[0].content == "the late arrival"

    # deleting it removes its bits (trigger) and it leaves the results
    doc = next(d for d in desk.store.list_documents(desk.kb("big").id) if d.filename == "late.txt")
    desk.delete_document(doc.id)
    assert bits_rows(desk) == 2000
    assert "the late arrival" not in [r.content for r in top(desk, target).results]

    # raw SQL the store never saw: a changed embedding and a new chunk without bits
    conn = desk.store.connection()
    kb_id = desk.kb("big").id
    with desk.store.write() as w:
        w.execute("UPDATE kb_chunks SET embedding = ? WHERE content = 'chunk 7'", (target.tobytes(),))
        seq = w.execute("SELECT max(seq) + 1 FROM kb_chunks").fetchone()[0]
        doc_id = w.execute("SELECT document_id FROM kb_chunks WHERE content = 'chunk 8'").fetchone()[0]
        w.execute(
            "INSERT INTO kb_chunks(seq, id, kb_id, document_id, chunk_index, content, embedding) "
            "VALUES (?, 'raw-chunk', ?, ?, 999, 'imported by hand', ?)",
            (seq, kb_id, doc_id, target.tobytes()),
        )
        w.execute("INSERT INTO kb_chunks_fts(rowid, content) VALUES (?, 'imported by hand')", (seq,))
        w.execute("UPDATE kb_vector_state SET version = version + 1 WHERE kb_id = ?", (kb_id,))
    assert conn.execute("SELECT count(*) FROM kb_vector_bits").fetchone()[0] == 1999  # chunk 7 lost its bits
    got = [r.content for r in top(desk, target, limit=2).results]
    assert sorted(got) == ["chunk 7", "imported by hand"]
    assert bits_rows(desk) == 2001  # both filled in at the reload

    # deleting the KB removes its bits
    desk.delete_kb("big")
    assert bits_rows(desk) == 0
    desk.close()


def test_small_kbs_stay_exact_by_default(tmp_path):
    vectors = clustered(1000, 32)
    with open_desk(tmp_path / "small.db", home=tmp_path / "home", backend="numpy") as desk:
        desk.create_kb("big", model_id="m", dimensions=32)
        desk.add_document("big", "all.txt", [f"chunk {i}" for i in range(1000)], vectors=vectors)
        assert (
            sqlite_store(desk).vectors.quantize_above
            == quantized.DEFAULT_QUANTIZE_ABOVE
            == parse_config({}).vector.quantize_above
        )
        assert not sqlite_store(desk).vectors.uses_quantized(desk.store, desk.kb("big").id)
        q = queries(vectors, 1)[0]
        got = [r.content for r in top(desk, q).results]
        assert got == [f"chunk {i}" for i in np.argsort(-(vectors @ q))[:10]]
        assert bits_rows(desk) == 0  # the quantised path was never touched


def test_quantised_kb_stays_correct_while_a_small_one_is_exact(tmp_path):
    vectors = clustered(1500, 32)
    desk = build(tmp_path / "two.db", tmp_path, vectors, quantize_above=1000)
    desk.create_kb("small", model_id="m", dimensions=32)
    desk.add_document("small", "s.txt", ["only one"], vectors=[vectors[0]])
    res = desk.search(["big", "small"], "", query_vector=vectors[0], mode="vector", limit=3, threshold=-1)
    assert sorted(r.content for r in res.results[:2]) == ["chunk 0", "only one"]
    assert bits_rows(desk) == 1500  # only the big KB has bits
    desk.close()


def test_config_bounds_and_defaults():
    cfg = parse_config({"vector": {"backend": "numpy", "quantize_above": 0, "oversample": 4}})
    assert (cfg.vector.backend, cfg.vector.quantize_above, cfg.vector.oversample) == ("numpy", 0, 4)
    with pytest.raises(ConfigError, match="quantize_above"):
        parse_config({"vector": {"quantize_above": -1}})
    with pytest.raises(ConfigError, match="oversample"):
        parse_config({"vector": {"oversample": 0}})
    with pytest.raises(ConfigError, match="integer"):
        parse_config({"vector": {"oversample": 2.5}})


# ── keyword search bounded at scale ────────────────────────────────────────────
def test_keyword_terms_are_bounded_by_leaving_out_the_most_common(tmp_path, monkeypatch):
    with open_desk(tmp_path / "kw.db", home=tmp_path / "home") as desk:
        desk.create_kb("text")
        chunks = [f"common filler {'shared' if i % 2 else 'other'} words {'rare' if i < 3 else ''}" for i in range(200)]
        desk.add_document("text", "t.txt", chunks)
        store = sqlite_store(desk)
        terms = ["rare", "shared", "common"]  # rows: 3, 100, 200
        bounded_terms = store.lookup.bounded_terms
        monkeypatch.setattr(keywords, "SCORED_TERM_BUDGETS", 1)
        assert bounded_terms(terms, budget=10_000) == (terms, terms)  # 200 chunks x 3 terms fit: untouched
        assert bounded_terms(terms, budget=110) == (["rare", "shared"], ["rare", "shared"])
        assert bounded_terms(terms, budget=100) == (["rare"], ["rare", "shared"])
        assert bounded_terms(terms, budget=50) == (["rare"], ["rare"])
        assert bounded_terms(["common", "filler"], budget=50) == (
            ["common"],
            ["common"],
        )  # the rarest stays
        monkeypatch.setattr(keywords, "SCORED_TERM_BUDGETS", 4)  # the default: score terms up to 4 budgets
        store.lookup.df_cache.clear()
        assert bounded_terms(terms, budget=40) == (["rare"], ["rare", "shared"])
        assert bounded_terms(terms, budget=50) == (["rare"], terms)
        assert store.lookup.bounded_fts_query("rare shared common", budget=40) == '("rare") AND ("rare" OR "shared")'
        # what keyword search does with it: only rows with the rare word, the others add to their score
        monkeypatch.setattr(sqlite_lookup, "KEYWORD_POSTINGS_BUDGET", 40)
        hits = desk.search(["text"], "rare shared common", mode="keyword", limit=5).results
        assert [r.content for r in hits] == [chunks[1], chunks[0], chunks[2]]  # chunk 1 also holds "shared"
