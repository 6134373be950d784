"""What only Postgres has: team ids that are UUIDs of a teams table, a pool of server
connections, a server that can drop them.

Every store scenario (KB records, documents and integrity, search, cascades,
concurrency) runs on every engine from tests/ (the ``engine_desk`` fixture); keyword
ranking parity: test_pg_keyword.py.
"""

import threading

import psycopg
import pytest

from kbdesk import open_desk
from kbdesk.errors import InvalidInputError, NotFoundError
from pg_support import sql


# ── KB records: team ids are UUIDs here (the rest runs on every engine in tests/test_kb_records.py)
def test_team_scope_needs_a_team(pg_uri, kbdesk_home):
    from kbdesk.config import parse_config

    with pytest.raises(InvalidInputError, match="team id"), open_desk(pg_uri) as desk:
        desk.create_kb("t", scope="team")
    team = sql(pg_uri, "INSERT INTO teams(name) VALUES ('Eng') RETURNING id")[0][0]
    config = parse_config({"identity": {"username": "lead", "teams": {"Eng": "admin"}}})
    with open_desk(pg_uri, config=config) as desk:
        with pytest.raises(NotFoundError, match="no team"):
            desk.create_kb("t", scope="team", team_id="00000000-0000-0000-0000-000000000000")
        kb = desk.create_kb("t", scope="team", team_id=str(team))
        assert kb.scope == "team" and kb.owner_id is None and kb.team_id == str(team)


# ── connections ──────────────────────────────────────────────────────────────
def test_threads_that_end_give_their_connections_back(pg_desk):
    pg_desk.create_kb("shared")

    def work():
        pg_desk.kb("shared")

    for _ in range(12):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    import gc

    gc.collect()
    # worker threads come and go; their connections went back to the idle pool
    assert len(pg_desk.store._open) <= 4


def test_a_dropped_connection_is_replaced(pg_desk, pg_uri):
    pg_desk.create_kb("survivor")
    sql(
        pg_uri,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid()",
    )
    with pytest.raises(psycopg.OperationalError):  # the next statement on the dead connection fails…
        pg_desk.list_kbs()
    assert [kb.name for kb in pg_desk.list_kbs()] == ["survivor"]  # …and the one after reconnects
