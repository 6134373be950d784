"""Benchmark: kbdesk's subtitle reader beside webvtt-py, what a Python user would otherwise use.

Not part of the test run. On the real subtitle files in tests/real_files/subtitles/ (from
webvtt-py's own test suite) and any files or folders given: the CPU time of kbdesk's
``extract_bytes`` (decoding, cues, markup, NFKC: everything a KB gets) against webvtt-py's
``webvtt.read`` / ``webvtt.from_srt`` (cue text, tags left in) on each file, best of
``--rounds``; and whether each holds the other's words (the distinct words of all cues,
lower-cased, markup tags removed from webvtt-py's text first). A file one of them refuses
is listed with its reason.

    pip install --target /tmp/webvtt webvtt-py==0.6.0
    .venv/bin/python bench/bench_subtitles.py --webvtt /tmp/webvtt [FILE_OR_DIR ...] [--rounds 5]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from kbdesk.ingest.extract import ExtractionError, extract_bytes  # noqa: E402

_TAG = re.compile(r"<[^<>]*>")


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(rounds):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--webvtt", type=Path, help="a folder webvtt-py is installed in (pip install --target)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.webvtt:
        sys.path.insert(0, str(args.webvtt))
    import webvtt

    files: list[Path] = []
    for given in args.paths or [ROOT / "tests" / "real_files" / "subtitles"]:
        files += sorted(p for p in given.rglob("*") if p.suffix in (".srt", ".vtt")) if given.is_dir() else [given]
    total = {"bytes": 0, "kbdesk": 0.0, "webvtt": 0.0}
    ours_all: set[str] = set()
    theirs_all: set[str] = set()
    for path in files:
        data = path.read_bytes()
        read = webvtt.from_srt if path.suffix == ".srt" else webvtt.read
        try:
            k_time, ours = _best(lambda data=data, path=path: extract_bytes(data, path.name), args.rounds)
        except ExtractionError as exc:
            print(f"{path.name}: kbdesk refuses it: {exc}")
            continue
        try:
            w_time, theirs = _best(lambda read=read, path=path: read(str(path)), args.rounds)
        except Exception as exc:  # noqa: BLE001 - the other library's own errors, reported
            print(f"{path.name}: webvtt-py refuses it: {type(exc).__name__}: {exc}; kbdesk: {len(ours.sections)} cues")
            continue
        theirs_words = _words(_TAG.sub("", " ".join(c.text for c in theirs)))
        ours_words = _words(ours.text)
        ours_all |= ours_words
        theirs_all |= theirs_words
        total["bytes"] += len(data)
        total["kbdesk"] += k_time
        total["webvtt"] += w_time
        print(
            f"{path.name}: {len(data):,} bytes; kbdesk {k_time * 1e3:.2f} ms, {len(ours.sections)} sections; "
            f"webvtt-py {w_time * 1e3:.2f} ms, {len(theirs)} captions; words only kbdesk's "
            f"{sorted(ours_words - theirs_words)[:8]}, only webvtt-py's {sorted(theirs_words - ours_words)[:8]}"
        )
    mb = total["bytes"] / 1e6
    print(
        f"\nall read by both: {mb:.3f} MB; kbdesk {mb / total['kbdesk']:.1f} MB/s, webvtt-py "
        f"{mb / total['webvtt']:.1f} MB/s ({total['webvtt'] / total['kbdesk']:.1f}x); kbdesk holds "
        f"{len(ours_all & theirs_all) / len(theirs_all):.1%} of webvtt-py's words, webvtt-py "
        f"{len(ours_all & theirs_all) / len(ours_all):.1%} of kbdesk's"
    )


if __name__ == "__main__":
    main()
