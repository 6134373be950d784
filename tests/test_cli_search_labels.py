"""``kbdesk search`` says what its numbers are and why nothing came back."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kbdesk.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[1] / "assets" / "sample"


@pytest.fixture
def run(kbdesk_home):
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(cli, [str(a) for a in args])

    assert invoke("kb", "create", "demo", "--keyword-only").exit_code == 0
    assert invoke("add", "demo", SAMPLE, "-q").exit_code == 0
    return invoke


def test_each_number_says_what_it_is_and_the_footer_what_ranks(run):
    result = run("search", "demo", "How do I restore a backup?")
    assert result.exit_code == 0, result.output
    first = next(line for line in result.stdout.splitlines() if line.startswith("1. "))
    assert first.startswith("1. words ") and "getting-started.md" in first
    footer = " ".join(result.stdout.split()[-30:])
    assert "ranked by keyword relevance (BM25)" in footer and "words: the share of the query's words" in footer


def test_a_filter_with_documents_but_no_matching_words_says_no_passage_matched(run):
    result = run("search", "demo", "OpenID password", "--type", "pdf")  # the PDF holds neither word
    assert result.exit_code == 0
    assert "no passage matched in the documents within type pdf" in result.stderr
    assert "no document matches the filter" not in result.stderr
    nothing = run("search", "demo", "OpenID password", "--type", "docx")  # no DOCX in the KB
    assert "no document matches the filter (type docx)" in nothing.stderr
