"""Fill a knowledge base through the library with kbdesk's sample corpus (assets/).

Usage: python examples/fill_demo.py KB

Each paragraph of each file under assets/ becomes a chunk. (The ingestion pipeline,
with extraction, chunking and embedding, replaces this once it lands.)
"""

from __future__ import annotations

import sys
from pathlib import Path

from kbdesk import open_desk

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def main(kb: str) -> None:
    with open_desk() as desk:
        for path in sorted(ASSETS.glob("*.md")) + sorted(ASSETS.glob("*.txt")):
            paragraphs = [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
            desk.add_document(kb, path.name, paragraphs, content_type="text/markdown"
                              if path.suffix == ".md" else "text/plain", size_bytes=path.stat().st_size)
            print(f"added {path.name}: {len(paragraphs)} chunks")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo")
