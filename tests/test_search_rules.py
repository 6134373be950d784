"""The threshold rule in hybrid mode, honest scores, and text normalisation, on every engine."""

import pytest
from click.testing import CliRunner

from helpers import axis
from kbdesk.search import coverage, search
from kbdesk.textnorm import fold, nfkc

CAT, DOG = 0, 1


@pytest.fixture
def desk(engine_desk):
    return engine_desk


def sources(response):
    return [r.source for r in response.results]


def test_defaults_are_a_prefix_of_the_threshold_off_ranking(desk):
    from kbdesk.models import ChunkInput

    desk.create_kb("Mix", model_id="toy", dimensions=8)
    # keyword-strong but off-meaning, meaning-strong without the words, both, neither
    docs = {
        "exact.txt": ("the vacuum freeze age setting", axis(DOG)),
        "meaning.txt": ("cats purr and sleep", axis(CAT)),
        "both.txt": ("vacuum freeze keeps cats safe", axis(CAT, extra={DOG: 0.5})),
        "weak.txt": ("a freeze of one kind", axis(DOG)),
        "noise.txt": ("nothing related at all", axis(DOG, extra={CAT: 0.2})),
    }
    for name, (text, vector) in docs.items():
        desk.add_document("Mix", name, [ChunkInput(text)], vectors=[vector])
    query = ("vacuum freeze", axis(CAT))
    off = desk.search(["Mix"], query[0], query_vector=query[1], threshold=-1.0, limit=20)
    defaults = desk.search(["Mix"], query[0], query_vector=query[1])
    assert defaults.mode == "hybrid" and len(defaults.results) <= 5
    assert sources(defaults) == sources(off)[: len(defaults.results)]
    # the keyword #1 stays although its cosine is 0; no keyword support and a cosine
    # under the threshold is cut; a weak keyword match with cosine 0 is cut
    assert {"both.txt", "meaning.txt", "exact.txt"} <= set(sources(defaults))
    assert "noise.txt" not in sources(defaults) and "weak.txt" not in sources(defaults)
    explain = {e["source"]: e for e in desk.search(["Mix"], query[0], query_vector=query[1], explain=True).explain}
    assert explain["noise.txt"]["cut"] == "threshold" and explain["weak.txt"]["cut"] == "threshold"
    assert explain["exact.txt"]["cosine"] == pytest.approx(0.0, abs=1e-6) and explain["exact.txt"]["cut"] is None
    assert all(r.metadata["score_kind"] == "cosine" for r in defaults.results)


def test_rrf_fusion_keeps_by_the_same_rule(desk):
    from kbdesk.models import ChunkInput

    desk.create_kb("Mix", model_id="toy", dimensions=8)
    desk.add_document("Mix", "exact.txt", [ChunkInput("rotate the signing keys")], vectors=[axis(DOG)])
    desk.add_document("Mix", "far.txt", [ChunkInput("unrelated words")], vectors=[axis(DOG)])
    response = search(desk.store, [desk.kb("Mix")], "signing keys", axis(CAT), mode="hybrid", fusion="rrf")
    assert sources(response) == ["exact.txt"]


def test_a_threshold_given_to_a_keyword_search_is_named_not_silently_dropped(desk):
    desk.create_kb("Ops")
    desk.add_document("Ops", "runbook.md", ["Rotate the TLS certificates every ninety days."])
    # auto mode on a KB without vectors answers by keyword: the threshold cannot apply
    response = desk.search(["Ops"], "rotate certificates", threshold=0.9)
    assert response.mode == "keyword" and sources(response) == ["runbook.md"]
    assert any("threshold applies to vector and hybrid search only" in n for n in response.notes)
    assert not desk.search(["Ops"], "rotate certificates").notes


def test_keyword_scores_say_what_they_are_and_ignore_other_kbs(desk):
    desk.create_kb("Ops")
    desk.add_document(
        "Ops", "runbook.md", ["Rotate the TLS certificates every ninety days.", "Certificates expire; renew them."]
    )
    alone = desk.search(["Ops"], "rotate certificates", mode="keyword")
    assert sources(alone) == ["runbook.md", "runbook.md"]
    assert [r.similarity for r in alone.results] == [1.0, 0.5]  # both words, then one of two
    assert {r.metadata["score_kind"] for r in alone.results} == {"keyword coverage"}
    desk.create_kb("Loud")
    for i in range(10):
        desk.add_document("Loud", f"loud{i}.txt", [f"rotate rotate certificates certificates rotate {i}"])
    together = desk.search(["Ops", "Loud"], "rotate certificates", mode="keyword", limit=20)
    ops = {r.content: r.similarity for r in together.results if r.kb == "Ops"}
    assert ops == {r.content: r.similarity for r in alone.results}


def test_coverage_is_the_share_of_query_words_held():
    assert coverage("when do backups run", "Backups run nightly.") == 1.0
    assert coverage("freezing tables", "VACUUM FREEZE on a table") == 1.0  # light stems
    assert coverage("café menus", "the CAFE opens") == 0.5
    assert coverage("the", "nothing here") == 0.0


def test_cli_refuses_a_threshold_in_keyword_mode(kbdesk_home):
    from kbdesk import open_desk
    from kbdesk.cli.main import cli

    with open_desk() as d:
        d.create_kb("Ops")
        d.add_document("Ops", "a.txt", ["backups run nightly"])
    result = CliRunner().invoke(cli, ["search", "Ops", "backups", "--mode", "keyword", "--threshold", "0.5"])
    assert result.exit_code == 2
    assert "--threshold applies to vector and hybrid search" in result.output
    assert CliRunner().invoke(cli, ["search", "Ops", "backups", "--mode", "keyword"]).exit_code == 0


def test_normal_forms():
    assert nfkc("proﬁling ＡＢＣ") == "profiling ABC"  # noqa: RUF001 - full-width letters on purpose
    assert nfkc("café") == "café"  # accents stay in what is stored and shown
    assert fold("Proﬁling CAFÉ Ｓtraße") == "profiling cafe strasse"  # noqa: RUF001 - a full-width S


def test_ligatures_and_accents_are_found_by_their_plain_spelling(desk, tmp_path):
    desk.create_kb("Papers")
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "perf.txt").write_text("Notes on proﬁling the ﬂow of requests.\n", encoding="utf-8")
    (folder / "menu.md").write_text("# Menu\n\nThe Café serves crème brûlée.\n", encoding="utf-8")
    report = desk.add("Papers", [folder])
    assert not report.failed
    hits = desk.search(["Papers"], "profiling flow", mode="keyword").results
    assert [h.source for h in hits] == ["perf.txt"] and "profiling the flow" in hits[0].content
    assert sources(desk.search(["Papers"], "cafe creme brulee", mode="keyword")) == ["menu.md"]
    full_width = "ｐｒｏｆｉｌｉｎｇ"  # noqa: RUF001 - a full-width query
    assert sources(desk.search(["Papers"], full_width, mode="keyword")) == ["perf.txt"]
    assert sources(desk.search(["Papers"], "CAFÉ", mode="keyword")) == ["menu.md"]


def test_accents_fold_in_chunks_written_directly(desk):
    # text that does not come through extraction: the engines fold it themselves
    desk.create_kb("Direct")
    desk.add_document("Direct", "fr.txt", ["Le garçon a commandé un café."])
    assert sources(desk.search(["Direct"], "garcon commande cafe", mode="keyword")) == ["fr.txt"]
