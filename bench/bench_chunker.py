"""Benchmark: kbdesk's chunker against langchain-text-splitters' RecursiveCharacterTextSplitter.

Not part of the test run. Needs the ``bench`` extra (langchain-text-splitters).

Text: the SciFact corpus, each abstract as ``title + "\\n\\n" + text``, repeated until the
total reaches ``--mb`` megabytes (10**6 bytes of UTF-8). Both chunkers get the same text
in two shapes: every abstract as its own document, and everything joined with blank
lines into one document. Each timing is the best of ``--repeats`` runs.

langchain is given the same separator hierarchy as kbdesk (plus ``""`` so that it, too,
can cut words that are too long) and, for reference, its own default separators.
langchain's ``split_text`` returns bare strings; kbdesk's returns Chunk objects with
offsets and a token estimate, which is more work, and it is timed that way. The row
"kbdesk, splitting only" times the internal span computation alone (chunk texts and
offsets), the part that corresponds to what langchain returns.

Linearity: kbdesk (and langchain) on one document of ``--mb / 4`` and of ``--mb``
megabytes; seconds per MB should stay flat (ratio near 1.0). kbdesk also gets three
adversarial documents of the same two lengths (no separator at all, CJK without
punctuation, 900-character words) that would expose a quadratic path.

Garbage collection stays on, but everything alive before the timings (langchain's and
pydantic's module objects, the corpus) is moved out of its way with ``gc.freeze()``, as a
long-running process would have it; otherwise each full collection re-walks that heap
and the timings measure the importer more than the chunker.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path

from langchain_text_splitters import RecursiveCharacterTextSplitter

from harness import best_of, command_line, machine_info, machine_line, markdown_table, parser, scifact_dir
from kbdesk.ingest.chunker import DEFAULT_SEPARATORS, _chunk_spans, split_text
from scifact import read_jsonl

MB = 1_000_000


def load_documents(path: Path, min_mb: float) -> list[str]:
    """SciFact abstracts (title, blank line, text), repeated until at least *min_mb* MB."""
    abstracts = [f"{row['title']}\n\n{row['text']}".strip() for row in read_jsonl(path)]
    size = sum(len(a.encode("utf-8")) for a in abstracts)
    repeats = -(-int(min_mb * MB) // size)  # ceiling division
    return abstracts * repeats


def mbytes(docs: list[str]) -> float:
    return sum(len(d.encode("utf-8")) for d in docs) / MB


def best_time(fn: Callable[[], list[str]], repeats: int) -> tuple[float, list[str]]:
    (seconds,), (result,) = best_of([fn], repeats)
    return seconds, result


def run_kbdesk(docs: list[str], size: int, overlap: int) -> list[str]:
    out = []
    for doc in docs:
        chunks = split_text(doc, size, overlap)
        out.extend(c.content for c in chunks)
    return out


def run_kbdesk_spans(docs: list[str], size: int, overlap: int) -> list[str]:
    """The splitting alone: chunk texts and offsets, no Chunk objects, no token estimate."""
    out = []
    for doc in docs:
        out.extend(content for _, _, content in _chunk_spans(doc, size, overlap, DEFAULT_SEPARATORS))
    return out


def run_langchain(splitter: RecursiveCharacterTextSplitter, docs: list[str]) -> list[str]:
    out = []
    for doc in docs:
        out.extend(splitter.split_text(doc))
    return out


def linearity(
    label: str, fn: Callable[[list[str]], list[str]], small: list[str], large: list[str], repeats: int
) -> dict[str, str]:
    """Seconds per MB on a document and on one four times as long."""
    per_mb = []
    for data in (small, large):
        seconds, _ = best_time(lambda data=data: fn(data), repeats)
        per_mb.append(seconds / mbytes(data))
    return {
        "chunker, text": label,
        "1× size (MB)": f"{mbytes(small):.1f}",
        "s/MB at 1×": f"{per_mb[0]:.4f}",
        "4× size (MB)": f"{mbytes(large):.1f}",
        "s/MB at 4×": f"{per_mb[1]:.4f}",
        "4× ÷ 1×": f"{per_mb[1] / per_mb[0]:.2f}",
    }


def check_kbdesk(docs: list[str], size: int, overlap: int) -> None:
    """The offset invariant on real text (outside the timings)."""
    for doc in docs[:2000]:
        for c in split_text(doc, size, overlap):
            assert c.content == doc[c.metadata["start"] : c.metadata["end"]]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--mb", type=float, default=20.0, help="megabytes of text (default 20)")
    ap.add_argument("--repeats", type=int, default=5, help="runs per timing; the best counts (default 5)")
    ap.add_argument("--size", type=int, default=1000, help="chunk size (default 1000)")
    ap.add_argument("--overlap", type=int, default=200, help="chunk overlap (default 200)")
    ap.add_argument("--corpus", type=Path, help="a BEIR corpus.jsonl (default: SciFact's, see harness.paths)")
    args = ap.parse_args()

    size, overlap = args.size, args.overlap
    docs = load_documents(args.corpus or scifact_dir() / "corpus.jsonl", args.mb)
    joined = ["\n\n".join(docs)]
    quarter = ["\n\n".join(docs[: len(docs) // 4])]
    total = mbytes(docs)

    same = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, separators=[*DEFAULT_SEPARATORS, ""])
    default = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    chunkers: list[tuple[str, Callable[[list[str]], list[str]]]] = [
        ("kbdesk split_text", lambda d: run_kbdesk(d, size, overlap)),
        ("kbdesk, splitting only", lambda d: run_kbdesk_spans(d, size, overlap)),
        ("langchain, same separators", lambda d: run_langchain(same, d)),
        ("langchain, default separators", lambda d: run_langchain(default, d)),
    ]

    check_kbdesk(docs, size, overlap)
    machine = machine_info()
    gc.collect()
    gc.freeze()

    rows = []
    speeds: dict[tuple[str, str], float] = {}
    for shape, data in (("per abstract", docs), ("one document", joined)):
        mb = mbytes(data)
        for name, fn in chunkers:
            seconds, chunks = best_time(lambda fn=fn, data=data: fn(data), args.repeats)
            lengths = [len(c) for c in chunks]
            speeds[(shape, name)] = mb / seconds
            rows.append(
                {
                    "text shape": shape,
                    "chunker": name,
                    "MB": f"{mb:.1f}",
                    "best time (s)": f"{seconds:.2f}",
                    "MB/s": f"{mb / seconds:.2f}",
                    "chunks": len(chunks),
                    "max chunk length": max(lengths),
                    "chunks over limit": sum(n > size for n in lengths),
                }
            )
            print(f"  {shape:13} {name:30} {seconds:7.2f} s", file=sys.stderr)
    ratios = [
        {
            "text shape": shape,
            "kbdesk": ours,
            **{
                f"÷ langchain ({kind} separators)": (
                    f"{speeds[(shape, ours)] / speeds[(shape, f'langchain, {kind} separators')]:.2f}×"
                )
                for kind in ("same", "default")
            },
        }
        for shape in ("per abstract", "one document")
        for ours in ("kbdesk split_text", "kbdesk, splitting only")
    ]

    linear = [
        linearity(f"{name}, SciFact", fn, quarter, joined, args.repeats) for name, fn in (chunkers[0], chunkers[2])
    ]
    # inputs that would expose a quadratic path: no separator at all, CJK without
    # punctuation, words of 900 characters (each one just fits a chunk)
    quarter_chars = len(quarter[0])
    adversarial = (("no separators", "a"), ("CJK, no punctuation", "汉"), ("900-character words", "y" * 900 + " "))
    for label, unit in adversarial:
        small = [unit * (quarter_chars // len(unit))]
        linear.append(linearity(f"kbdesk split_text, {label}", chunkers[0][1], small, [small[0] * 4], args.repeats))

    print(f"\n### Chunker throughput ({total:.1f} MB of SciFact abstracts, chunk size {size}, overlap {overlap})\n")
    print(markdown_table(rows, align="llrrrrrr"))
    print()
    print(markdown_table(ratios, align="llrr"))
    print("\n#### Linearity (one document of 1× and 4× the length)\n")
    print(markdown_table(linear))
    print(f"\nCommand (from the repository root): `{command_line()}`\n")
    print(f"Machine: {machine_line(machine)}; single-threaded; best of {args.repeats} runs per timing.")


if __name__ == "__main__":
    main()
