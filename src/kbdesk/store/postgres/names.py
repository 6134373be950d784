"""One document per file name in a KB where one came by upload, kept by the database.

The rule (:data:`kbdesk.store.doc_types.NAME_RULE`) is SQLite's (store/sqlite/migrations.py,
step 16): a row whose source is ``upload:NAME`` is the only row of its file name in its KB,
so an upload and ``kbdesk add`` of one name at once cannot both insert one. A row trigger
checks each new row (and each row whose KB, name or source changes) against the rows
committed so far; two writers of one KB meet on the KB's row, which the trigger locks
first (every write of a KB's documents updates that row's counts in its transaction
anyway), so the second writer's check sees the first one's row once it has committed.
The function runs as the tables' owner and is callable by nobody else.
"""

from __future__ import annotations

from kbdesk.store.doc_types import NAME_RULE
from kbdesk.store.postgres.dbapi import PgConnection

FUNCTION = "kbdesk_one_document_per_name"

# pairs an older kbdesk could leave: the newest ready row stays (with its chunks), and an
# upload loses to the rows of files on disk unless it is that newest ready row
MEND = """DELETE FROM kb_documents d USING (
    SELECT id, upload, count(*) OVER named AS n_rows, bool_or(upload) OVER named AS any_upload,
           first_value(upload) OVER ranked AS best_upload, row_number() OVER ranked AS n
    FROM (SELECT id, kb_id, filename, status, updated_at, left(source_path, 7) = 'upload:' AS upload
          FROM kb_documents WHERE source_path IS NOT NULL) rows
    WINDOW named AS (PARTITION BY kb_id, filename),
           ranked AS (PARTITION BY kb_id, filename ORDER BY status = 'ready' DESC, updated_at DESC, id DESC)
) ranked
WHERE d.id = ranked.id AND ranked.n_rows > 1 AND ranked.any_upload AND ranked.n > 1
      AND (ranked.best_upload OR ranked.upload)"""

RECOUNT = """UPDATE knowledge_bases k SET
    document_count = (SELECT count(*) FROM kb_documents d WHERE d.kb_id = k.id),
    chunk_count = (SELECT count(*) FROM kb_chunks c WHERE c.kb_id = k.id),
    total_bytes = (SELECT coalesce(sum(size_bytes), 0) FROM kb_documents d WHERE d.kb_id = k.id)"""


def install(conn: PgConnection, path: str) -> None:
    """Mend old pairs, then the index the check reads and the trigger; idempotent.
    ``path``: the function's fixed search_path (kbdesk's schema, then pg_temp)."""
    conn.execute(MEND)
    conn.execute(RECOUNT)
    conn.execute("CREATE INDEX IF NOT EXISTS idx_kbdoc_name ON kb_documents(kb_id, filename)")
    conn.execute(f"""CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $f$
        BEGIN
            IF NEW.source_path IS NULL OR (TG_OP = 'UPDATE' AND NEW.kb_id = OLD.kb_id
                    AND NEW.filename = OLD.filename AND NEW.source_path IS NOT DISTINCT FROM OLD.source_path) THEN
                RETURN NEW;
            END IF;
            -- after whoever is writing this KB's documents has committed
            PERFORM 1 FROM knowledge_bases WHERE id = NEW.kb_id FOR NO KEY UPDATE;
            IF EXISTS (SELECT 1 FROM kb_documents d WHERE d.kb_id = NEW.kb_id AND d.filename = NEW.filename
                       AND d.id <> NEW.id AND d.source_path IS NOT NULL AND d.source_path <> NEW.source_path
                       AND (left(NEW.source_path, 7) = 'upload:' OR left(d.source_path, 7) = 'upload:')) THEN
                RAISE EXCEPTION '{NAME_RULE}' USING ERRCODE = 'unique_violation',
                    DETAIL = 'another document of this knowledge base has this file name, and one came by upload';
            END IF;
            RETURN NEW;
        END $f$""")
    conn.execute(f"REVOKE ALL ON FUNCTION {FUNCTION}() FROM PUBLIC")
    conn.execute("DROP TRIGGER IF EXISTS kbdesk_document_name ON kb_documents")
    conn.execute(
        "CREATE TRIGGER kbdesk_document_name BEFORE INSERT OR UPDATE OF kb_id, filename, source_path "
        f"ON kb_documents FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()"
    )
