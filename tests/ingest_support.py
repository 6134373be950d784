"""Builders for ingestion tests: a configured fake provider and folders of files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kbdesk import open_desk
from kbdesk.paths import get_paths

GOOD_FILES = {
    "guide.md": "# Guide\n\n## Backups\n\nBackups run every night at two.\n\n## Restore\n\n"
    "Run the restore command with the snapshot name.\n",
    "notes/meeting.txt": "We agreed to ship the lighthouse feature in March.\n\nAlice owns the rollout.",
    "people.csv": "name,role\nAlice,engineer\nBob,designer\n",
    "page.html": "<html><head><title>Status</title><style>p{}</style></head><body><h1>Status</h1>"
    "<p>All systems are green.</p><script>alert(1)</script></body></html>",
}


def write_files(root: Path, files: Mapping[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def configure_provider(server, name: str = "fake", extra: str = "") -> None:
    """Point a [providers.NAME] table of config.toml at a FakeOpenAI server."""
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = path.read_text() if path.exists() else ""
    path.write_text(
        previous + f'[providers.{name}]\nkind = "custom"\nbase_url = "{server.base_url}"\n'
        f"max_retries = 3\ntimeout = 5.0\n{extra}\n"
    )


def vector_desk(server, kb: str = "docs", **open_kwargs):
    configure_provider(server)
    desk = open_desk(**open_kwargs)
    desk.create_kb(kb, model_id="text-embedding-3-small", provider="fake")
    return desk
