"""The ingestion pipeline and the CLI, unchanged, against a Postgres database."""

import json
import socket

from click.testing import CliRunner

from ingest_support import GOOD_FILES, configure_provider, write_files
from kbdesk import open_desk
from kbdesk.cli.main import cli
from pg_support import sql


def statuses(desk, kb):
    return {d.filename: d.status for d in desk.store.list_documents(desk.kb(kb).id)}


def test_a_folder_is_ingested_updated_synced_rebuilt_and_reembedded(tmp_path, fake_openai, pg_uri, kbdesk_home):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    configure_provider(fake_openai)
    with open_desk(pg_uri) as desk:
        desk.create_kb("docs", model_id="text-embedding-3-small", provider="fake")
        report = desk.add("docs", [folder])
        assert sorted(report.added) == sorted(GOOD_FILES) and report.failed == [] and report.embedded_chunks > 0
        assert set(statuses(desk, "docs").values()) == {"ready"}
        kb = desk.kb("docs")
        assert kb.dimensions == fake_openai.dimensions and kb.document_count == 4
        hit = desk.search(["docs"], "restore snapshot", mode="keyword").results[0]
        assert hit.source == "guide.md" and hit.metadata["headings"] == ["Guide", "Restore"]
        assert desk.search(["docs"], "designer", mode="keyword").results[0].source == "people.csv"
        for doc in desk.store.list_documents(kb.id):  # originals kept locally, beside the server's label
            assert (desk.files_dir / doc.storage_key).read_bytes() == (folder / doc.filename).read_bytes()
        assert "postgres" in str(desk.files_dir)
        usage = sql(pg_uri, "SELECT role, provider, model, sum(inputs) FROM kbdesk_usage_log GROUP BY 1, 2, 3")
        assert usage == [("embedding", "fake", "text-embedding-3-small", report.embedded_chunks)]

        calls = len(fake_openai.embedding_requests)
        again = desk.add("docs", [folder])
        assert sorted(again.unchanged) == sorted(GOOD_FILES) and len(fake_openai.embedding_requests) == calls

        (folder / "notes" / "meeting.txt").write_text("We moved the lighthouse launch to April.")
        (folder / "people.csv").unlink()
        synced = desk.add("docs", [folder], sync=True)
        assert synced.updated == ["notes/meeting.txt"] and synced.removed == ["people.csv"]
        assert desk.search(["docs"], "April launch", mode="keyword").results[0].source == "notes/meeting.txt"
        assert desk.kb("docs").document_count == 3
        assert sql(pg_uri, "SELECT count(*) FROM kb_documents")[0][0] == 3

        counts, rebuilt = desk.ingestor().rebuild("docs")
        assert counts == {"total_docs": 3, "rebuilding": 3, "skipped": 0} and rebuilt.failed == []
        assert rebuilt.embedded_chunks == 0  # every text's vector is known

        kb, changed = desk.ingestor().reembed("docs", "fake", "nomic-embed-text")
        assert kb.model_id == "nomic-embed-text" and changed.embedded_chunks > 0
        assert (
            desk.search(["docs"], "We moved the lighthouse launch to April.").results[0].source == "notes/meeting.txt"
        )


def test_an_interrupted_document_is_resumed(tmp_path, pg_uri, kbdesk_home):
    folder = write_files(tmp_path / "corpus", {"a.txt": "Alpha text about tides.", "b.txt": "Beta text."})
    with open_desk(pg_uri) as desk:
        kb = desk.create_kb("plain")
        desk.add("plain", [folder])
        doc = next(d for d in desk.store.list_documents(kb.id) if d.filename == "a.txt")
    # as a killed process leaves it: in flight, without chunks, claimed by a process that is gone
    sql(pg_uri, "DELETE FROM kb_chunks WHERE document_id = %s", doc.id)
    sql(
        pg_uri,
        "UPDATE kb_documents SET status = 'embedding', claimed_by = %s WHERE id = %s",
        f"{socket.gethostname()}:999999",
        doc.id,
    )
    with open_desk(pg_uri) as desk:
        report = desk.ingestor().resume("plain")
        assert report.resumed == ["a.txt"] and statuses(desk, "plain")["a.txt"] == "ready"
        assert desk.search(["plain"], "tides").results[0].source == "a.txt"


def test_the_cli_runs_against_postgres(tmp_path, pg_uri, monkeypatch):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(cli, ["--db", pg_uri, *args])
        assert result.exit_code == 0, result.output
        return result.output

    assert "Created knowledge base 'notes'" in run("kb", "create", "notes", "--keyword-only")
    assert json.loads(run("add", "notes", str(folder), "--json"))["failed"] == []
    found = json.loads(run("search", "notes", "restore snapshot", "--json"))
    assert found["results"][0]["source"] == "guide.md" and found["mode"] == "keyword"
    assert json.loads(run("kb", "show", "notes", "--json"))["document_count"] == 4
    docs = json.loads(run("docs", "notes", "--json"))["data"]
    assert {d["status"] for d in docs} == {"ready"}
    assert json.loads(run("doc", "status", "notes", "guide.md", "--json"))["status"] == "ready"
    run("doc", "rm", "notes", "guide.md")
    assert json.loads(run("kb", "list", "--json"))["data"][0]["document_count"] == 3
    doctor = json.loads(runner.invoke(cli, ["--db", pg_uri, "doctor", "--json"]).output)
    assert doctor["vector_backend"]["active"] == "pgvector" and doctor["database"]["knowledge_bases"] == 1
    run("kb", "rm", "notes", "--yes")
    assert sql(pg_uri, "SELECT count(*) FROM kb_chunks")[0][0] == 0
    monkeypatch.setenv("KBDESK_DB", pg_uri)  # KBDESK_DB (and config storage.db) select Postgres too
    assert "No knowledge bases yet" in runner.invoke(cli, ["kb", "list"]).output


def test_the_server_keeps_file_names_not_the_paths_on_the_adders_disk(tmp_path, pg_uri, kbdesk_home):
    """Added from a desktop, a document on the server keeps its name; where the file lies
    on that desktop is kept only as keyed hashes: the same file is still the same
    document, --sync still finds what went from a folder, and nobody reads the path."""
    secret = tmp_path / "home" / "alice" / "Clients-Acme-Layoffs"
    folder = write_files(
        secret,
        {
            "plan.md": "# Plan\n\nThe walrus ships.",
            "sub/notes.txt": "herons",
            "x.csv": "name,role\nAda,engineer\nGrace,admiral\n",
        },
    )
    with open_desk(pg_uri) as desk:
        desk.create_kb("docs", keyword_only=True)
        assert sorted(desk.add("docs", [folder]).added) == ["plan.md", "sub/notes.txt", "x.csv"]
        rows = sql(pg_uri, "SELECT to_jsonb(d)::text FROM kb_documents d")
        assert len(rows) == 3 and not any("Clients-Acme" in r[0] or "alice" in r[0] for r in rows)
        assert sorted(desk.add("docs", [folder / "plan.md"]).unchanged) == ["plan.md"]  # the same document
        assert sorted(desk.add("docs", [folder]).unchanged) == ["plan.md", "sub/notes.txt", "x.csv"]
        (folder / "sub" / "notes.txt").unlink()
        report = desk.add("docs", [folder], sync=True, exclude=["*.csv"])  # x.csv is only filtered out: kept
        assert report.removed == ["sub/notes.txt"]
        assert sorted(d.filename for d in desk.documents("docs")) == ["plan.md", "x.csv"]
        other = write_files(tmp_path / "elsewhere", {"plan.md": "# Plan\n\nAnother plan."})
        assert desk.add("docs", [other], sync=True).added == ["plan.md"]  # another folder: another document
        assert sorted(d.filename for d in desk.documents("docs")) == ["plan.md", "plan.md", "x.csv"]


def test_paths_kept_before_are_hidden_by_the_schema_step_the_same_way(tmp_path, pg_uri, kbdesk_home):
    """Documents an older kbdesk kept with their paths: the schema step turns each into
    the hidden form kbdesk computes now, so adding the file again finds its document."""
    from kbdesk.ingest.names import hidden_source

    folder = write_files(tmp_path / "old" / "Ünïcode folder", {"a.md": "# A\n\nalpha", "b/c.md": "# C\n\ngamma"})
    with open_desk(pg_uri) as desk:
        desk.create_kb("docs", keyword_only=True)
        desk.add("docs", [folder])
        uid = desk.store.local_user_id
    for path in (folder / "a.md", folder / "b" / "c.md"):  # as an older kbdesk kept them
        sql(
            pg_uri,
            "UPDATE kb_documents SET source_path = %s WHERE source_path = %s",
            str(path),
            hidden_source(path, uid),
        )
    step = sql(pg_uri, "SELECT version FROM kbdesk_migrations WHERE name = 'private_sources'")[0][0]
    sql(pg_uri, "DELETE FROM kbdesk_migrations WHERE version >= %s", step)  # private_sources (and later) run again
    with open_desk(pg_uri) as desk:
        assert sorted(r[0] for r in sql(pg_uri, "SELECT source_path FROM kb_documents")) == sorted(
            hidden_source(p, uid) for p in (folder / "a.md", folder / "b" / "c.md")
        )
        assert sorted(desk.add("docs", [folder]).unchanged) == ["a.md", "b/c.md"]
