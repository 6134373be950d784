"""Migrations: fresh files, upgrades of old files, refusal of newer files."""

import pytest
from click.testing import CliRunner

from kbdesk import open_desk
from kbdesk.cli.main import cli
from kbdesk.errors import SchemaTooNewError
from kbdesk.filters import Filters
from kbdesk.store import choose_driver
from kbdesk.store.sqlite.migrations import MIGRATIONS, migrate

SEED_TABLES = {"knowledge_bases", "kb_documents", "kb_chunks", "channel_knowledge_bases"}
OWN_TABLES = {"audit_log", "usage_log", "users", "teams", "channels", "schema_migrations", "settings"}


def raw_connection(path):
    driver = choose_driver("auto")
    conn = driver.module.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def test_fresh_database_has_every_table_and_records_each_step(tmp_path):
    db = tmp_path / "fresh.db"
    with open_desk(db) as desk:
        conn = desk.store.connection()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables >= SEED_TABLES | OWN_TABLES
        assert "kb_chunks_fts" in tables
        steps = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
        assert steps == [(i + 1, name) for i, (name, _) in enumerate(MIGRATIONS)]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        # a local user exists and owns personal KBs by default
        kb = desk.create_kb("mine")
        assert kb.scope == "personal" and kb.owner_id == desk.store.local_user_id


def test_reopening_applies_nothing_and_keeps_the_local_user(tmp_path):
    db = tmp_path / "again.db"
    with open_desk(db) as desk:
        user = desk.store.local_user_id
    with open_desk(db) as desk:
        assert desk.store.local_user_id == user
        assert desk.store.schema_version() == len(MIGRATIONS)


def test_old_file_is_upgraded_and_keeps_its_data(tmp_path):
    db = tmp_path / "old.db"
    conn = raw_connection(db)
    migrate(conn, MIGRATIONS[:1])  # a file written by the first kbdesk: no keyword index yet
    conn.execute("INSERT INTO users(id, username) VALUES ('u1', 'old')")
    conn.execute("INSERT INTO settings(key, value) VALUES ('local_user_id', 'u1')")
    conn.execute("INSERT INTO knowledge_bases(id, name, owner_id) VALUES ('kb1', 'Legacy', 'u1')")
    conn.execute(
        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
        "status, uploaded_by) VALUES ('d1', 'kb1', 'old.txt', 'text/plain', 10, 'k', 'ready', 'u1')"
    )
    conn.execute(
        "INSERT INTO kb_chunks(id, kb_id, document_id, chunk_index, content) "
        "VALUES ('c1', 'kb1', 'd1', 0, 'the aurora borealis glows green')"
    )
    conn.close()

    with open_desk(db) as desk:
        assert desk.store.schema_version() == len(MIGRATIONS)
        assert desk.store.local_user_id == "u1"
        hits = desk.search(["Legacy"], "aurora").results
        assert [h.content for h in hits] == ["the aurora borealis glows green"]
        assert hits[0].source == "old.txt"
        # documents indexed before filters existed get their file type from their name
        doc = desk.document("Legacy", "old.txt")
        assert (doc.file_type, doc.tags, doc.title, doc.folder) == ("txt", [], None, None)
        assert desk.search(["Legacy"], "aurora", filters=Filters(types=("txt",))).results
        assert desk.search(["Legacy"], "aurora", filters=Filters(types=("pdf",))).results == []


def test_newer_file_is_refused_clearly(tmp_path):
    db = tmp_path / "future.db"
    with open_desk(db):
        pass
    conn = raw_connection(db)
    conn.execute("INSERT INTO schema_migrations(version, name) VALUES (?, 'from_the_future')", (len(MIGRATIONS) + 7,))
    conn.close()
    with pytest.raises(SchemaTooNewError) as info:
        open_desk(db)
    assert "newer kbdesk" in str(info.value)
    result = CliRunner().invoke(cli, ["--db", str(db), "kb", "list"])
    assert result.exit_code == 1
    assert "newer kbdesk" in result.output and "Traceback" not in result.output


def test_not_a_database_is_a_clear_error(tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not sqlite " * 100)
    result = CliRunner().invoke(cli, ["--db", str(bogus), "kb", "list"])
    assert result.exit_code == 1
    assert "not a kbdesk database" in result.output or "cannot open" in result.output
    assert "Traceback" not in result.output
