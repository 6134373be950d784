"""A team server for the remote-KB tests: ``kbdesk serve`` on loopback in a home of its
own, holding ``Product Docs``; the test's own home is the desktop that adds it as a remote."""

from __future__ import annotations

import json
import os
from pathlib import Path

from serve_support import ServeProcess, cli

from helpers import pg_store

HANDBOOK = (
    "# Team handbook\n\n## Backups\n\nThe team server backs up every knowledge base nightly at 02:00 "
    "and keeps the backups for 30 days.\n\n## Onboarding\n\nNew members get a token from an administrator.\n"
)
NOTES = "# My notes\n\n## Backups\n\nMy laptop backups run on Fridays to the external disk.\n"


class TeamServer:
    env_desk: dict[str, str]  # the environment of a desk with this server as its remote "team" (set by fixtures)

    def __init__(
        self,
        tmp_path: Path,
        *,
        provider_toml: str = "",
        kb_args: tuple[str, ...] = (),
        db: str | None = None,
        serve_args: tuple[str, ...] = (),
    ) -> None:
        self.home = tmp_path / "server-home"
        self.home.mkdir()
        if provider_toml:
            (self.home / "config.toml").write_text(provider_toml)
        self.env = {**os.environ, "KBDESK_HOME": str(self.home)}
        docs = tmp_path / "server-docs"
        docs.mkdir()
        (docs / "handbook.md").write_text(HANDBOOK)
        at = ("--db", db) if db else ()  # a team server: Postgres behind kbdesk serve
        cli(*at, "kb", "create", "Product Docs", *kb_args, env=self.env)
        cli(*at, "add", "Product Docs", str(docs), env=self.env)
        user = "desk"
        if db:  # a token acts as a kbdesk user of the database: here the owner's own identity
            from kbdesk import open_desk

            with open_desk(db, home=self.home) as owner:
                user = pg_store(owner).identity.username
        made = cli(*at, "token", "create", "--json", "--user", user, "--read-only", env=self.env)
        self.token = json.loads(made.stdout)["token"]
        self.server = ServeProcess(tmp_path, *at, serve_args=serve_args, env=self.env)
        self.url = self.server.base + "/api"

    def stop(self) -> None:
        self.server.stop()


def local_kb(tmp_path: Path, env: dict[str, str], *kb_args: str) -> None:
    docs = tmp_path / "local-docs"
    docs.mkdir()
    (docs / "notes.md").write_text(NOTES)
    cli("kb", "create", "Notes", *kb_args, env=env)
    cli("add", "Notes", str(docs), env=env)
