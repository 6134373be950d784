"""``kbdesk kb set-model`` with no model named: one line, the KB untouched.

(Found by typing the ingestor against the desk: the re-embedding asked the KB's embedder
for its model key while a KB without a model has no embedder.)
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kbdesk import open_desk
from kbdesk.cli.main import cli


def test_set_model_to_an_empty_model_is_refused_in_one_line(kbdesk_home: Path) -> None:
    with open_desk() as desk:
        desk.create_kb("demo", keyword_only=True)
        desk.add_document("demo", "notes.md", ["Restore a backup with harbor snapshot restore."])
    result = CliRunner().invoke(cli, ["kb", "set-model", "demo", "--model", "", "--provider", "local", "--yes"])
    assert result.exit_code != 0
    assert not isinstance(result.exception, AttributeError), result.exception
    assert "name a model" in result.output
    assert "Traceback" not in result.output
    with open_desk() as desk:
        kb = desk.kb("demo")
        assert kb.model_id is None and kb.chunk_count == 1
