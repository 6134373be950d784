"""First use of an empty database by several kbdesk processes at once.

Two people (or a CLI and the TUI) that start kbdesk against the same new, empty
server database both create the pgvector extension and the schema. An advisory lock
serialises that: both opens succeed, and the schema is there exactly once.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid

import psycopg
import pytest

from kbdesk.store.postgres import PostgresStore
from kbdesk.store.postgres.schema import MIGRATIONS
from pg_support import sql, with_database

OPENERS = 4


def _open_at_once(uri: str, count: int) -> list[BaseException]:
    """Open ``count`` stores on ``uri`` in threads released together; the errors raised."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def open_one() -> None:
        start.wait()
        try:
            PostgresStore(uri).close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _schema_once(uri: str) -> None:
    steps = sql(uri, "SELECT version, name FROM kbdesk_migrations ORDER BY version")
    assert steps == [(i, name) for i, (name, _) in enumerate(MIGRATIONS, start=1)]
    assert sql(uri, "SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == [(1,)]
    tables = sql(
        uri,
        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ANY(%s)",
        ["knowledge_bases", "kb_documents", "kb_chunks", "channel_knowledge_bases", "kbdesk_migrations"],
    )
    assert tables == [(5,)]


def test_threads_opening_an_empty_database_together_all_succeed(empty_pg_uri, pg_server):
    # several fresh databases: the race is between the first openers of each one
    uris = [empty_pg_uri]
    with psycopg.connect(pg_server, autocommit=True) as conn:
        for _ in range(3):
            name = f"first_use_{uuid.uuid4().hex[:12]}"
            conn.execute(f"CREATE DATABASE {name} TEMPLATE template0")
            uris.append(with_database(pg_server, name))
    for uri in uris:
        assert not sql(uri, "SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        errors = _open_at_once(uri, OPENERS)
        assert errors == [], [str(e) for e in errors]
        _schema_once(uri)


OPEN_SCRIPT = """
import sys
from kbdesk.store.postgres import PostgresStore
sys.stdin.readline()  # every process is started before any of them opens
PostgresStore(sys.argv[1]).close()
print("opened")
"""


@pytest.mark.slow
def test_two_processes_opening_an_empty_database_together_both_succeed(empty_pg_uri):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_SCRIPT, empty_pg_uri],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for p in procs:  # release both at once
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == "opened"
    _schema_once(empty_pg_uri)
