"""What a store scenario checks inside the database, for whichever engine holds it.

The scenarios themselves are written once (tests/test_cascade.py, test_concurrency.py…);
these helpers answer in each engine's terms: every table's row count, the vector index
objects a KB owns, the database's own integrity checks, and opening the same database
again as another process would.
"""

from __future__ import annotations

from typing import Any

from helpers import table_counts as sqlite_table_counts
from kbdesk import open_desk


def row_counts(desk: Any) -> dict[str, int]:
    """Rows in every table (SQLite's shadow tables included, FTS segments excluded)."""
    conn = desk.store.connection()
    if desk.store.kind == "sqlite":
        return sqlite_table_counts(conn)
    tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
    return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def vector_index_objects(desk: Any) -> set[str]:
    """The per-KB vector index objects: sqlite-vec tables and matrix files, or pgvector HNSW indexes."""
    conn = desk.store.connection()
    if desk.store.kind == "sqlite":  # vec_kb_<id> (its shadow tables add a suffix), <db>.vectors/<id>.f32
        from kbdesk.store.sqlite.matrix_file import folder_for

        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'vec_kb_%'")]
        folder = folder_for(desk.store.path)
        files = {f"file {p.name}" for p in folder.iterdir()} if folder.is_dir() else set()
        return {n for n in names if n.count("_") == 2} | files
    return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'kbvec_%'")}


def has_index_objects(desk: Any) -> bool:
    """Whether the engine keeps a per-KB index object: every one does (on SQLite both backends
    search a KB's matrix file, which its first search writes)."""
    return True


def build_vector_index(desk: Any, kb_name: str, dims: int) -> None:
    """Make the engine build the KB's vector index now (a search does it on SQLite)."""
    from helpers import axis

    kb = desk.kb(kb_name)
    if desk.store.kind == "postgres":
        desk.store.vectors.ensure(kb.id, dims, force=True)
    else:
        desk.search([kb_name], "x", query_vector=axis(0, dims), mode="vector")


def assert_sound(desk: Any) -> None:
    """The database's own checks pass, and no chunk lacks its document."""
    conn = desk.store.connection()
    orphans = conn.execute(
        "SELECT count(*) FROM kb_chunks c LEFT JOIN kb_documents d ON d.id = c.document_id WHERE d.id IS NULL"
    ).fetchone()[0]
    assert orphans == 0
    if desk.store.kind == "sqlite":
        conn.execute("INSERT INTO kb_chunks_fts(kb_chunks_fts) VALUES ('integrity-check')")
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    else:
        assert (
            conn.execute(
                "SELECT count(*) FROM kb_documents d LEFT JOIN knowledge_bases k ON k.id = d.kb_id WHERE k.id IS NULL"
            ).fetchone()[0]
            == 0
        )


def add_channel(desk: Any, kb_id: str) -> None:
    """A seed channel row bound to the KB (what a chat front end of the same database writes)."""
    conn = desk.store.connection()
    if desk.store.kind == "sqlite":
        with desk.store.write() as w:
            w.execute("INSERT INTO channels(id, title) VALUES ('ch1', 'chat')")
            w.execute("INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES ('ch1', ?)", (kb_id,))
        return
    channel = conn.execute("INSERT INTO channels(title) VALUES ('chat') RETURNING id").fetchone()[0]
    conn.execute("INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", (channel, kb_id))


def reopen(desk: Any) -> Any:
    """The same database opened anew, as a second process would."""
    return open_desk(desk.store.uri if desk.store.kind == "postgres" else desk.db_path)


def count(desk: Any, table: str) -> int:
    return desk.store.connection().execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def stored_facts(desk: Any, kb_name: str) -> dict[str, tuple[str, list[str], str | None]]:
    """What each document of a KB holds for search filters, read from its row in the
    engine's own terms (JSON text on SQLite, JSONB on Postgres): path -> (file type, tags, title)."""
    import json

    kb = desk.kb(kb_name)
    mark = "%s" if desk.store.kind == "postgres" else "?"
    rows = (
        desk.store.connection()
        .execute(f"SELECT filename, file_type, tags, title FROM kb_documents WHERE kb_id = {mark}", (kb.id,))
        .fetchall()
    )
    return {f: (t, json.loads(tags) if isinstance(tags, str) else list(tags), title) for f, t, tags, title in rows}
