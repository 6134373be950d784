"""The report of ``bench/bench_search.py``: Markdown from its result JSON, and ``docs/BENCHMARKS-search.md``."""

from __future__ import annotations

from typing import Any

from harness import ROOT, fmt_ms, kept_section, markdown_table
from harness.blas import blas_line
from harness.docs import with_markers

DOC = ROOT / "docs" / "BENCHMARKS-search.md"
AIM_VECTOR_MS = 10.0  # exact vector search p50 at 100k x 384
AIM_HYBRID_MS = 50.0  # full hybrid query at 100k chunks
NAN = float("nan")


def k(n: int) -> str:
    return f"{n // 1000}k"


def label(spec: dict[str, Any]) -> str:
    return f"{k(spec['n'])} × {spec['d']}"


def trio(st: dict[str, float]) -> str:
    return f"{fmt_ms(st['p50'])} / {fmt_ms(st['p95'])} ({fmt_ms(st['min'])})"


def p50(v: dict[str, Any], name: str) -> str:
    return fmt_ms(v[name]["p50"]) if name in v else "n/a"


def header(r: dict[str, Any], limit: int) -> list[str]:
    m, bw = r["machine"], r["bandwidth"]
    git_end = r.get("git_end")
    return [
        f"Command: `{r['command']}` — {r['queries']} timed queries per data set after {r['warmup']} warm-up, "
        f"limit {limit}, run {r['date']}, {r['wall_s'] / 60:.1f} min wall.",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu']}; {m['cache']}; {m['memory']} RAM), shared with other engineers' test "
        f"runs (load average {m['loadavg'][0]:.2f} at start). Python {m['python']}, SQLite {m['sqlite']} via "
        f"{m['sqlite_driver']}, sqlite-vec {m['sqlite_vec']} (build flags: {m['sqlite_vec_build_flags']}), numpy "
        f"{m['numpy']}, {blas_line(m['blas'])}; OPENBLAS_CORETYPE={m['env']['OPENBLAS_CORETYPE'] or 'unset'}, "
        f"OPENBLAS_NUM_THREADS={m['env']['OPENBLAS_NUM_THREADS'] or 'unset'}. kbdesk at {m['git'] or '?'}"
        + (
            f" at the start, {git_end} at the end (other engineers commit while it runs)"
            if git_end and git_end != m["git"]
            else ""
        )
        + ".",
        "",
        f"Memory read rate (float32 gemv over 1 GiB, larger than L3): {bw['gb_s_all_threads']:.1f} GB/s with all "
        "OpenBLAS threads"
        + (f", {bw['gb_s_one_thread']:.1f} GB/s on one thread" if "gb_s_one_thread" in bw else "")
        + ' (best of a measurement before and after the run). "Floor" below = bytes scanned ÷ the '
        "all-threads rate; a data set that fits in L3 can be scanned faster than that.",
        "",
    ]


def vector_tables(r: dict[str, Any]) -> list[str]:
    gb_s = r["bandwidth"]["gb_s_all_threads"]
    latency, parts = [], []
    for run in r["runs"]:
        s, v, ratio, rec = run["spec"], run["vector"], run["vector_paired_ratio"], run.get("recall_at_10", {})
        mb = s["n"] * s["d"] * 4 / 1e6
        latency.append(
            {
                "chunks × dims": label(s),
                "MB scanned": f"{mb:.0f}",
                "floor": fmt_ms(mb / gb_s),
                "plain numpy p50 / p95 (min)": trio(v["baseline"]),
                **(
                    {
                        "default: matrix file p50 / p95 (min)": trio(v["default (matrix file)"]),
                        "matrix file × plain": f"{ratio['default (matrix file)']:.2f}×",
                    }
                    if "default (matrix file)" in v
                    else {}
                ),
                "sqlite-vec vec0 p50 / p95 (min)": trio(v["sqlite-vec"]),
                "sqlite-vec × plain": f"{ratio['sqlite-vec']:.1f}×",
                "numpy backend p50 / p95 (min)": trio(v["numpy"]),
                "numpy × plain": f"{ratio['numpy']:.1f}×",
            }
        )
        parts.append(
            {
                "chunks × dims": label(s),
                "plain numpy": p50(v, "baseline"),
                "plain numpy, 1 thread": p50(v, "baseline 1 thread"),
                "sqlite-vec index only": p50(v, "sqlite-vec index"),
                "sqlite-vec desk.search": p50(v, "sqlite-vec"),
                "what-if: vec0 + mmap": p50(v, "what-if: vec0 query with mmap"),
                "numpy index only": p50(v, "numpy index"),
                "numpy desk.search": p50(v, "numpy"),
                "numpy desk.search, 1 thread": p50(v, "numpy 1 thread"),
                "recall@10 sqlite-vec / numpy": f"{rec.get('sqlite-vec index', NAN):.3f} / "
                f"{rec.get('numpy index', NAN):.3f}",
            }
        )
    errors = ", ".join(f"{run['sqlite_vec_max_similarity_error']:.1e}" for run in r["runs"])
    return [
        '### Vector search latency (ms), `desk.search(mode="vector", limit=10)`',
        "",
        markdown_table(latency),
        "",
        "Plain numpy = `M @ q` + `argpartition` on an in-memory float32 matrix (OpenBLAS, all threads), "
        'the floor a user writes in five lines. "× plain" = the median over queries of (backend time ÷ '
        "plain-numpy time for the same query, measured moments apart), which is steadier than a ratio of "
        "p50s when other processes come and go. (min) = the fastest query: what the machine does when "
        "nobody else is using it.",
        "",
        "### Where the vector time goes (p50 ms)",
        "",
        markdown_table(parts),
        "",
        '"index only" = `store.vector_candidates(kb, dims, q, 10)`: the backend\'s scan without the '
        'search pipeline (KB lookup, query checks, result rows). "1 thread" = the same call with OpenBLAS '
        'set to one thread around it. "what-if: vec0 + mmap" = kbdesk\'s vec0 SQL on its own connection '
        "with `PRAGMA mmap_size` set (not what kbdesk does today). Recall = overlap of the top-10 with plain "
        f"numpy's exact top-10; largest |similarity error| of sqlite-vec's `1 - d²/2`: {errors}.",
        "",
    ]


PHASES = [
    "start",
    "after_index_build",
    "after_numpy_load",
    "after_baseline_load",
    "after_vector_queries",
    "after_text_queries",
]


def once_tables(r: dict[str, Any]) -> list[str]:
    once, phases, ingest = [], [], []
    for run in r["runs"]:
        s, o = run["spec"], run["once"]
        once.append(
            {
                "chunks × dims": label(s),
                "open desk (s)": f"{o['open_sqlite_vec_s']:.2f} / {o['open_numpy_s']:.2f}",
                "sqlite-vec first search = index build (s)": f"{o['first_search_sqlite_vec_s']:.2f}",
                "numpy first search = matrix load (s)": f"{o['first_search_numpy_s']:.2f}",
                "baseline load, streamed (s)": f"{o['baseline_load_s']:.2f}",
                "numpy load: RSS +MB / peak +MB / +MB after malloc_trim": (
                    f"{o['numpy_load_rss_delta_mb']:.0f} / {o['numpy_load_peak_over_before_mb']:.0f} / "
                    f"{o.get('numpy_load_rss_delta_after_trim_mb', NAN):.0f}"
                ),
                "matrix MB": f"{o['matrix_mb']:.0f}",
                "vec0 tables MB": f"{o.get('sizes_after_index', {}).get('vec0_mb', NAN):.0f}",
                "DB file MB": f"{o['db_mb_after_index']:.0f}",
                "WAL MB after index": f"{o['wal_mb_after_index']:.0f}",
                "peak RSS MB (whole run)": f"{max(p for _, p in run['rss'].values()):.0f}",
            }
        )
        phases.append(
            {
                "chunks × dims": label(s),
                **{
                    p.replace("_", " "): f"{run['rss'][p][0]:.0f} / {run['rss'][p][1]:.0f}" if p in run["rss"] else "—"
                    for p in PHASES
                },
            }
        )
        a, b = run["ingest_stale"], run["ingest_fresh"]
        ingest.append(
            {
                "chunks × dims": label(s),
                "add, vec0 index stale": f"{a['add_s']:.2f} ({a['chunks'] / a['add_s']:.0f}/s)",
                "add, vec0 index fresh": f"{b['add_s']:.2f} ({b['chunks'] / b['add_s']:.0f}/s)",
                "delete, stale": f"{a['delete_s']:.2f}",
                "delete, fresh": f"{b['delete_s']:.2f}",
            }
        )
    return [
        "### One-off costs and memory",
        "",
        markdown_table(once),
        "",
        "RSS per phase (current / peak-so-far, MB), from `/proc/self/statm` and `getrusage`:",
        "",
        markdown_table(phases),
        "",
        "Ingestion into the existing KB (one document of 500 SciFact chunks with vectors, then deleted), "
        "s per document and chunks/s:",
        "",
        markdown_table(ingest),
        "",
        '"fresh" = the sqlite-vec index is up to date, so `add_document` also inserts the vectors into vec0 '
        "in its transaction; while it is stale (never searched since the last numpy-side write, or a new KB) "
        'nothing is written to vec0 and the next sqlite-vec search rebuilds the whole table (the "index '
        'build" column above).',
        "",
    ]


def text_tables(r: dict[str, Any], pool: int) -> list[str]:
    lines: list[str] = []
    for run in r["runs"]:
        if "text" not in run:
            continue
        s, t = run["spec"], run["text"]
        rows = [
            {"query": name, "p50": fmt_ms(st["p50"]), "p95": fmt_ms(st["p95"])} for name, st in t["latency"].items()
        ]
        lines += [
            f"### Keyword and hybrid latency (ms) at {k(s['n'])} chunks × {s['d']} (SciFact text, random vectors)",
            "",
            markdown_table(rows),
            "",
            f"SciFact claims as queries: {t['terms_mean']:.1f} distinct words on average, "
            f"{t['terms_no_stopwords_mean']:.1f} without stopwords ({t['stopwords']} words, kbdesk's list); "
            f"OR-ed, one query matches {t['fts_rows_matched_mean']:.0f} of {s['n']} chunks on average with every "
            f'word, {t["fts_rows_matched_no_stopwords_mean"]:.0f} without stopwords. "keyword" and "hybrid" '
            f'are `desk.search`; "part" rows time one step of the hybrid alone (kbdesk\'s own calls); "SQL" '
            f"rows are top-{pool} FTS5 queries written here (with or without the join to `kb_chunks` that "
            f"restricts hits to the KB), for comparison whatever kbdesk's query builder does today. Without the "
            f"join the top-{pool} was the same for {t['no_join_same_results'] * 100:.0f}% of queries "
            f"(one KB holds every chunk here); leaving the stopwords out kept "
            f"{t['no_stopwords_top10_overlap'] * 100:.0f}% of the BM25 top-10.",
            "",
        ]
    return lines


def vec0_table(r: dict[str, Any]) -> list[str]:
    rows = []
    for mt in r["vec0"]:
        for name, st in mt["latency"].items():
            build, agree = mt["build_s"].get(name), mt["agreement"].get(name)
            rows.append(
                {
                    "data set": f"{k(mt['n'])} × {mt['d']}",
                    "vec0 table": name,
                    "build (s)": f"{build:.2f}" if build is not None else "—",
                    "p50 ms": fmt_ms(st["p50"]),
                    "p95 ms": fmt_ms(st["p95"]),
                    "× plain numpy": f"{mt['paired_ratio'].get(name, 1.0):.1f}×",
                    "same top-10 as kbdesk's table": (
                        f"order {agree['same_order'] * 100:.0f}%, set {agree['same_set'] * 100:.0f}%" if agree else "—"
                    ),
                }
            )
    return [
        "### sqlite-vec's own options (direct SQL on a connection with sqlite-vec loaded, same unit vectors)",
        "",
        markdown_table(rows, align="llrrrrl"),
        "",
        "Each table is built like kbdesk's index (`INSERT INTO vec(rowid, embedding) SELECT seq, embedding "
        "FROM kb_chunks ... ORDER BY seq`, one transaction) in a fresh WAL database file (or `:memory:`). "
        "vec0 stores vectors in chunks of `chunk_size` rows (default 1024) inside one BLOB per chunk.",
        "",
    ]


def build_table(r: dict[str, Any]) -> list[str]:
    rows = [
        {
            "chunks × dims": f"{k(b['n'])} × {b['d']}",
            "chunks/s": f"{b['chunks_per_s']:.0f}",
            "add_document total (s)": f"{b['add_document_s']:.1f}",
            "text MB": f"{b['text_mb']:.0f}",
            "DB MB (before vec0)": f"{b['db_mb']:.0f}",
            "built": "this run" if b.get("fresh") else "cached, " + b["built_at"],
        }
        for b in r["builds"].values()
    ]
    return [
        "### Build (side figure): `desk.add_document`, 500 chunks per document",
        "",
        markdown_table(rows, align="lrrrrl"),
        "",
    ]


def verdict(st: dict[str, float], aim: float) -> str:
    x = st["p50"]
    return (
        f"p50 {fmt_ms(x)} ms — {'meets' if x <= aim else 'misses'} (p95 {fmt_ms(st['p95'])}, "
        f"fastest {fmt_ms(st['min'])})"
    )


def aims(r: dict[str, Any]) -> list[str]:
    lines = ["### Aims", ""]
    target = next((run for run in r["runs"] if (run["spec"]["n"], run["spec"]["d"]) == (100_000, 384)), None)
    if target is None:
        lines.append("(The aims are stated at 100k chunks; this run did not measure 100k.)")
    else:
        v = target["vector"]
        rows = [
            {
                "aim": f"vector p50 ≤ {AIM_VECTOR_MS:.0f} ms at 100k × 384",
                "sqlite-vec": verdict(v["sqlite-vec"], AIM_VECTOR_MS),
                "numpy backend": verdict(v["numpy"], AIM_VECTOR_MS),
                "plain numpy": verdict(v["baseline"], AIM_VECTOR_MS),
            }
        ]
        if "text" in target:
            lat = target["text"]["latency"]
            rows.append(
                {
                    "aim": f"hybrid p50 ≤ {AIM_HYBRID_MS:.0f} ms at 100k",
                    "sqlite-vec": verdict(lat["hybrid sqlite-vec"], AIM_HYBRID_MS),
                    "numpy backend": verdict(lat["hybrid numpy"], AIM_HYBRID_MS),
                    "plain numpy": "—",
                }
            )
        lines += [
            markdown_table(rows, align="llll"),
            "",
            f"Verdicts are this run's p50, measured with a load average of {target['loadavg_start']:.1f}–"
            f'{target["loadavg_end"]:.1f} on 2 CPUs; "fastest" is the quickest of the '
            f"{target['vector']['numpy']['n']} queries, close to what an idle machine gives.",
        ]
    loads = [
        f"{label(run['spec']).replace(' ', '')} {run['loadavg_start']:.1f}/{run['loadavg_end']:.1f}"
        for run in r["runs"]
    ]
    loads += [f"vec0 {k(mt['n'])}×{mt['d']} {mt['loadavg_start']:.1f}/{mt['loadavg_end']:.1f}" for mt in r["vec0"]]
    return [
        *lines,
        "",
        "Load average at the start / end of each measurement (other processes share the 2 CPUs): "
        + ", ".join(loads)
        + ".",
    ]


def fresh_table(r: dict[str, Any]) -> list[str]:
    rows = []
    for run in r["runs"]:
        for name, f in run.get("fresh_process", {}).items():
            rows.append(
                {
                    "chunks × dims": label(run["spec"]),
                    "path": name,
                    "process wall p50 / p95 (ms)": f"{f['wall']['p50']:.0f} / {f['wall']['p95']:.0f}",
                    "search inside p50 (ms)": f"{f['search']['p50']:.1f}",
                    "peak RSS median / max (MB)": f"{f['peak_rss_mb_median']:.0f} / {f['peak_rss_mb_max']:.0f}",
                }
            )
    if not rows:
        return []
    return [
        "### A fresh process: one vector search (what one `kbdesk search` costs)",
        "",
        markdown_table(rows),
        "",
        'A new interpreter imports kbdesk, opens the desk and runs one `desk.search(mode="vector")`; the '
        "paths take turns. Wall = the whole process as its parent sees it; peak RSS = its own `VmHWM`.",
        "",
    ]


def render(r: dict[str, Any], *, limit: int, pool: int) -> str:
    return "\n".join(
        header(r, limit)
        + vector_tables(r)
        + fresh_table(r)
        + once_tables(r)
        + text_tables(r, pool)
        + vec0_table(r)
        + build_table(r)
        + aims(r)
    )


def write_doc(tables: str) -> None:
    DOC.write_text(
        "# Search latency: sqlite-vec vs numpy vs plain numpy, keyword and hybrid\n\n"
        "Written by `bench/bench_search.py` (full run); the tables below are regenerated on every full run, "
        "the discussion is kept.\n\n"
        "## How it is measured\n\n"
        "- One database per data set (`bench/results/`, cached): one KB, documents of 500 chunks added with "
        "`desk.add_document`, chunk texts from SciFact abstracts cut at sentence ends into ~1000-character "
        "pieces (≈10.4k pieces; beyond that, copies with 10% of the words dropped and the words rotated), "
        "random unit vectors.\n"
        "- Each data set is measured in its own process; both backends open the same file "
        '(`open_desk(backend="sqlite-vec")` and `open_desk(backend="numpy")`). The sqlite-vec index is '
        "marked stale first, so its first search always includes a full `vec0` build.\n"
        "- Timed queries run every method on the same query, in a fresh random order per query, so noise "
        "from other processes on this shared 2-CPU machine lands on all columns alike; the paired ratios to "
        "plain numpy are the figures to compare across machines, the (min) column is the quiet-machine "
        "figure.\n"
        '- Rows marked "what-if" or "SQL" are direct SQL written in the bench (not kbdesk code), to show '
        "what a change would buy.\n"
        "- OS page cache is warm (the databases were just built or read); this is in-memory search speed.\n\n"
        "## Discussion\n\n" + with_markers(kept_section(DOC)) + "\n\n## Results\n\n" + tables + "\n"
    )
