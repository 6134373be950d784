"""SciFact as bench data: abstracts, ~1000-character pieces cut at sentence ends, perturbed copies
of them (to make as many distinct chunks as a data set needs), and the claims used as queries.

The folder comes from :func:`harness.paths.scifact_dir` (``--scifact``, ``$KBDESK_BENCH_SCIFACT``,
or ``shared/eval/scifact`` beside the repository).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np

from harness.paths import scifact_dir

PIECE_CHARS = 1000  # target characters per piece


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def abstracts(folder: Path | None = None) -> list[dict[str, Any]]:
    """The corpus rows (``_id``, ``title``, ``text``) in file order."""
    return read_jsonl((folder or scifact_dir()) / "corpus.jsonl")


def pieces(folder: Path | None = None, piece_chars: int = PIECE_CHARS) -> list[str]:
    """Title + abstract, split at sentence ends into ~``piece_chars`` pieces."""
    out: list[str] = []
    for doc in abstracts(folder):
        text = f"{doc.get('title', '').strip()}. {doc.get('text', '').strip()}".strip(" .")
        buf = ""
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            if buf and len(buf) + 1 + len(sentence) > piece_chars:
                out.append(buf)
                buf = sentence
            else:
                buf = f"{buf} {sentence}" if buf else sentence
        if buf:
            out.append(buf)
    return out


def perturb(piece: str, rng: random.Random) -> str:
    """10% of the words dropped, the rest rotated: a near-copy that is not identical."""
    words = [w for w in piece.split() if rng.random() >= 0.1] or piece.split()
    cut = rng.randrange(len(words))
    return " ".join(words[cut:] + words[:cut])


def chunk_texts(n: int, source: list[str]) -> tuple[list[str], np.ndarray]:
    """``n`` texts: the source pieces, then perturbed copies until there are enough (so repeats are
    not identical postings); and for each text the index of the piece it was made from."""
    texts = list(source[:n])
    base = list(range(len(texts)))
    rnd = 0
    while len(texts) < n:
        rnd += 1
        rng = random.Random(rnd)
        for i, piece in enumerate(source):
            texts.append(perturb(piece, rng))
            base.append(i)
            if len(texts) == n:
                break
    return texts, np.asarray(base, dtype=np.int64)


def claims(folder: Path | None = None) -> list[str]:
    """The SciFact claims (``queries.jsonl``) in file order."""
    return [row["text"] for row in read_jsonl((folder or scifact_dir()) / "queries.jsonl")]
