"""One big KB in a SQLite file, as the search benchmarks build, cache and read it.

A data set is built once through the store API (``desk.add_document``, documents of a fixed
number of chunks) into ``bench/results/``, with a ``.json`` beside it that says what it holds;
a later run reuses it while that metadata matches. Measurements then read it through kbdesk and,
for baselines, through a raw connection with sqlite-vec loaded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness import file_mb, peak_rss_mb, scratch_dir

KB_NAME = "bench"
MODEL_ID = "bench-model"


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1, as float32."""
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def unit_rows(rng: np.random.Generator, rows: int, d: int) -> np.ndarray:
    """``rows`` random unit vectors of ``d`` dimensions."""
    x = rng.standard_normal((rows, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def exact_top(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    """The baseline: exact search as a user writes it in five lines (row numbers, best first)."""
    sims = matrix @ q
    top = np.argpartition(sims, -k)[-k:]
    return top[np.argsort(-sims[top])]


def overlap(got: Sequence[Any], exact: Sequence[Any], k: int) -> float:
    """Mean share of each exact top-``k`` found in the matching result (recall@k)."""
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(got, exact, strict=True)]))


def raw_connection(path: Path | str, requested: str = "auto") -> Any:
    """A connection with sqlite-vec loaded, made the way kbdesk makes them (``file:`` URIs too)."""
    from kbdesk.store.sqlite.driver import choose_driver, load_extensions

    driver = choose_driver(requested)
    conn = driver.module.connect(str(path), isolation_level=None, uri=str(path).startswith("file:"))
    load_extensions(conn, driver)
    return conn


def kb_id_of(path: Path, name: str = KB_NAME) -> str:
    conn = raw_connection(path)
    try:
        return conn.execute("SELECT id FROM knowledge_bases WHERE name = ?", (name,)).fetchone()[0]
    finally:
        conn.close()


def cached_meta(path: Path, fmt: str, n: int, d: int) -> dict[str, Any] | None:
    """The metadata of a cached data set, or None when it is missing or was made differently."""
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
    if not path.exists() or meta.get("format") != fmt or meta.get("n") != n or meta.get("d") != d:
        return None
    return meta


def build_kb_db(
    path: Path,
    *,
    fmt: str,
    d: int,
    texts: list[str],
    vectors: Callable[[int, int], Any],
    backend: str,
    doc_chunks: int,
    kb_name: str = KB_NAME,
    extra: dict[str, Any] | None = None,
    document: Callable[[int], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One KB of ``texts`` through ``desk.add_document`` (documents of ``doc_chunks``), with
    ``vectors(start, stop)`` for each document, written beside ``path`` and moved into place when
    complete; returns (and stores beside it) what was built and how fast. ``document(i)`` gives
    the i-th document's ``add_document`` arguments (``filename``, ``properties``, …) when set."""
    from kbdesk import open_desk

    n = len(texts)
    tmp = path.with_name(path.stem + ".building.db")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    add_s = 0.0
    t_all = time.perf_counter()
    with scratch_dir("home-") as home:
        with open_desk(db=tmp, home=home, backend=backend) as desk:
            kb = desk.create_kb(kb_name, model_id=MODEL_ID, dimensions=d)
            for start in range(0, n, doc_chunks):
                stop = min(n, start + doc_chunks)
                block = vectors(start, stop)
                more = dict(document(start // doc_chunks)) if document else {}
                name = more.pop("filename", f"doc-{start // doc_chunks:04d}.txt")
                t = time.perf_counter()
                desk.add_document(kb.id, name, texts[start:stop], vectors=block, **more)
                add_s += time.perf_counter() - t
        conn = raw_connection(tmp)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    total_s = time.perf_counter() - t_all
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    tmp.replace(path)
    meta = {
        "format": fmt,
        "n": n,
        "d": d,
        "documents": -(-n // doc_chunks),
        "add_document_s": add_s,
        "total_s": total_s,
        "chunks_per_s": n / add_s,
        "text_mb": sum(len(t.encode()) for t in texts) / 1e6,
        "db_mb": file_mb(path),
        **(extra or {}),
        "peak_rss_mb": peak_rss_mb(),
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return meta


def load_matrix(path: Path, kb_id: str, d: int) -> tuple[np.ndarray, np.ndarray]:
    """A baseline's own copy of a KB's vectors (seqs, float32 matrix), streamed into place."""
    conn = raw_connection(path)
    try:
        where = "FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL"
        count = conn.execute(f"SELECT count(*) {where}", (kb_id,)).fetchone()[0]
        seqs = np.empty(count, dtype=np.int64)
        matrix = np.empty((count, d), dtype=np.float32)
        for i, (seq, blob) in enumerate(conn.execute(f"SELECT seq, embedding {where} ORDER BY seq", (kb_id,))):
            seqs[i] = seq
            matrix[i] = np.frombuffer(blob, dtype=np.float32)
        return seqs, matrix
    finally:
        conn.close()


def remove_matrix_files(db: Path) -> None:
    """Delete the database's matrix files, so the next search measures writing them."""
    import shutil

    from kbdesk.store.sqlite.matrix_file import folder_for

    shutil.rmtree(folder_for(Path(db)), ignore_errors=True)


def fts_rows_matched(conn: Any, expressions: Sequence[str]) -> float:
    """Mean number of FTS rows each MATCH expression hits (how much work a keyword query is)."""
    sql = "SELECT count(*) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ?"
    return float(np.mean([conn.execute(sql, (expr,)).fetchone()[0] for expr in expressions]))
