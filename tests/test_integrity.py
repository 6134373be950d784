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
