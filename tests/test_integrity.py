"""Ingestion integrity on SQLite: one current document per file, whatever runs at once,
is killed or fails halfway (the scenarios are shared with Postgres)."""

import pytest

import integrity_scenarios as s
from kbdesk import open_desk


@pytest.fixture
def open_db(tmp_path):
    return lambda: open_desk(tmp_path / "kb.db")


def test_two_threads_add_the_same_folder(open_db, tmp_path):
    s.two_threads_add_the_same_folder(open_db, tmp_path)


def test_a_failing_new_version_keeps_the_old_text_marked_stale(open_db, tmp_path):
    s.a_failing_new_version_keeps_the_old_text_marked_stale(open_db, tmp_path)


def test_a_killed_update_chain_ends_with_the_newest_version(open_db, tmp_path):
    s.a_killed_update_chain_ends_with_the_newest_version(open_db, tmp_path)


def test_a_superseded_runner_cannot_write(open_db, tmp_path):
    s.a_superseded_runner_cannot_write(open_db, tmp_path)


def test_copies_are_their_own_documents(open_db, tmp_path, fake_openai):
    s.copies_are_their_own_documents(open_db, tmp_path, fake_openai)


def test_failures_are_remembered_until_the_file_changes(open_db, tmp_path):
    s.failures_are_remembered_until_the_file_changes(open_db, tmp_path)


def test_provider_failures_are_retried(open_db, tmp_path, fake_openai):
    s.provider_failures_are_retried(open_db, tmp_path, fake_openai)


def test_odd_file_names_fail_or_pass_alone(open_db, tmp_path):
    s.odd_file_names_fail_or_pass_alone(open_db, tmp_path)


class _CancelAfterFirstCall:
    """An in-process embedder that stops the ingestion once its first call is answered."""

    def __init__(self) -> None:
        self.ingestor = None
        self.inputs: list[str] = []

    def embed(self, texts, model, on_input_error="raise"):
        import numpy as np

        from kbdesk.providers import EmbedResult

        self.inputs += list(texts)
        if self.ingestor is not None:
            self.ingestor.cancel()
        rng = np.random.default_rng(7)
        return EmbedResult(vectors=[rng.standard_normal(8).tolist() for _ in texts], calls=1)


def test_vectors_paid_for_by_a_stopped_run_are_not_embedded_again(open_db, tmp_path):
    """A run stopped (Ctrl-C) or killed after its provider answered keeps those vectors
    staged; the next run uses them, and they leave the staging once their chunks are stored."""
    from kbdesk.ingest.batch import EMBED_GROUP

    texts = {f"n{i:03d}.txt": f"note {i} about the estuary and its {i} herons" for i in range(EMBED_GROUP + 30)}
    folder = s.write_files(tmp_path / "c", texts)
    desk = open_db()
    embedder = _CancelAfterFirstCall()
    desk.embedders.register("stopper", embedder)
    desk.create_kb("docs", model_id="m", provider="stopper")
    ingestor = desk.ingestor(workers=1)
    embedder.ingestor = ingestor
    first = ingestor.add("docs", [folder])
    assert first.cancelled and not first.added  # stopped once the provider answered its first call
    paid = len(embedder.inputs)
    assert 0 < paid < len(texts)
    embedder.ingestor = None
    second = desk.add("docs", [folder])
    assert sorted(second.added + second.resumed) == sorted(texts)
    assert len(embedder.inputs) == len(texts)  # the first call's chunks were not embedded again
    assert second.cached_chunks == paid
    staged = desk.store.connection().execute(
        "SELECT count(*) FROM embedding_cache WHERE model LIKE 'staged:%'").fetchone()[0]
    assert staged == 0
    desk.close()


def test_staged_vectors_are_forgotten_after_a_week(open_db, tmp_path):
    folder = s.write_files(tmp_path / "c", {"a.txt": "alpha"})
    desk = s.keyword_kb(open_db)
    desk.store.put_cached_vectors("staged:m", [("old", [1.0, 0.0]), ("new", [0.0, 1.0])])
    desk.store.put_cached_vectors("m", [("kept", [1.0, 1.0])])  # a re-embed's staging: not ours
    with desk.store.write() as conn:
        conn.execute("UPDATE embedding_cache SET created_at = '2020-01-01T00:00:00.000Z' "
                     "WHERE text_hash IN ('old', 'kept')")
    desk.add("docs", [folder])
    left = sorted(r[0] for r in desk.store.connection().execute("SELECT text_hash FROM embedding_cache"))
    assert left == ["kept", "new"]
    desk.close()
