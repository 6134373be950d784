"""What extraction gives, as one digest per file: a change to the table of formats (or to
a reader) compared before and after on real folders.

    PYTHONPATH=OLD/src .venv/bin/python bench/digest_extraction.py DIR [DIR ...] > before.json
    PYTHONPATH=NEW/src .venv/bin/python bench/digest_extraction.py DIR [DIR ...] > after.json
    cmp before.json after.json

For every file under the folders whose suffix kbdesk reads (PDFs and images, read in a
child process of their own, and files over 1 MB left out): the content type, text,
sections (text and metadata), warnings and chunks (1000 / 200) ``extract_bytes`` gives,
or its error. For every registered suffix: its content type, the name a fetched page of
that type is given, how a refusal names it, its flags and media types; and four small
samples read under that suffix (cp1252, UTF-16 with a BOM, XML declaring ISO-8859-1,
UTF-8), so each suffix's decoding is compared even where no real file has it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

from kbdesk.ingest import chunker, extract
from kbdesk.ingest.formats import SUPPORTED_SUFFIXES, format_for, media_types

SAMPLES = {
    "cp1252": "caf\xe9 na\xefve r\xe9sum\xe9\n[s]\nk = v\n# \xe9t\xe9\n".encode("cp1252"),
    "utf16": "caf\xe9 \u65e5\u672c\n[s]\nk = v\n".encode("utf-16"),
    "xmldecl": b'<?xml version="1.0" encoding="iso-8859-1"?>\n<a t="\xe9">caf\xe9</a>\n',
    "utf8": "def f():\n    '''caf\u00e9'''\n\n\\section{A}\n* H\nx: 1\n".encode(),
}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()[:16]


def read(data: bytes, name: str) -> dict[str, Any]:
    try:
        got = extract.extract_bytes(data, name)
    except Exception as exc:  # noqa: BLE001 - a refusal is part of what is compared
        return {"error": f"{type(exc).__name__}: {exc}"}
    chunks = chunker.chunk_sections(got.sections, 1000, 200)
    return {
        "content_type": got.content_type,
        "text": got.text,
        "sections": [(s.text, s.metadata) for s in got.sections],
        "warnings": got.warnings,
        "chunks": [(c.content, c.metadata) for c in chunks],
    }


def main(folders: list[str]) -> int:
    out: dict[str, str] = {"media types": digest(media_types())}
    for suffix in sorted(SUPPORTED_SUFFIXES):
        fmt = format_for("x" + suffix)
        assert fmt is not None
        facts = {
            "content_type": extract.content_type_for("x" + suffix),
            "typed_name": extract.typed_name("https://example.org/p", fmt.content_type),
            "refusal": fmt.refusal_name,
            "flags": (fmt.attachment, fmt.own_process, fmt.zip_based, fmt.reads_ole, fmt.sniff is not None),
            "ole_refusal": fmt.ole_refusal,
            "media_types": fmt.media_types,
        }
        out[f"suffix {suffix}"] = digest(facts)
        if not fmt.own_process:
            for label, data in SAMPLES.items():
                out[f"sample x{suffix} {label}"] = digest(read(data, "x" + suffix))
    files = 0
    for folder in folders:
        for here, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(names):
                path = os.path.join(here, name)
                fmt = format_for(name)
                if fmt is None or fmt.own_process or os.path.islink(path) or os.path.getsize(path) > 1_000_000:
                    continue
                with open(path, "rb") as f:
                    out[path] = digest(read(f.read(), name))
                files += 1
    json.dump(out, sys.stdout, indent=0, sort_keys=True)
    print(f"{files} files, {len(out)} digests", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
