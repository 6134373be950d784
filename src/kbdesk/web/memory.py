"""What kbdesk keeps of each web page between runs: the validators of the version
indexed (``ETag``, ``Last-Modified``), its links (a page that did not change still leads
to its links) and the hash of the bytes they describe.

One small JSON file per knowledge base beside the stored copies
(``files/web/<kb id>.json``), written whole and renamed over: validators are a cache — a
file lost or out of step costs one unconditional request per page, never a wrong
answer, because they are used only while the document's indexed bytes have the hash
recorded with them.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class Memory:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = json.loads(path.read_text("utf-8"))
            self.pages: dict[str, dict[str, Any]] = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            self.pages = {}

    def get(self, url: str, content_hash: str | None) -> dict[str, Any] | None:
        entry = self.pages.get(url)
        if not isinstance(entry, dict) or not content_hash or entry.get("hash") != content_hash:
            return None
        return entry

    def put(self, url: str, content_hash: str, validators: dict[str, str], links: list[str]) -> None:
        self.pages[url] = {"hash": content_hash, **validators, "links": links}

    def forget(self, url: str) -> None:
        self.pages.pop(url, None)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".web-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.pages, f, ensure_ascii=False)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
