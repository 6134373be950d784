"""A provider's faults stay local: a malformed answer fails only the inputs that cause it.

Real HTTP on loopback (tests/fake_openai.py). ``poison`` makes the fake server answer
badly to every request that holds a marked input, however it is batched: the client must
split its way down to that input and keep all the others.
"""

from __future__ import annotations

import pytest

from fake_openai import FakeOpenAI
from ingest_support import configure_provider, write_files
from kbdesk import open_desk
from kbdesk.providers import (
    EmbedResult,
    InvalidVectorError,
    OpenAICompatProvider,
    ProviderResponseError,
    ProviderSettings,
)
from kbdesk.providers.faults import check_result

MODEL = "nomic-embed-text"


@pytest.fixture
def server():
    with FakeOpenAI(dimensions=8) as fake:
        yield fake


@pytest.fixture
def provider(server):
    with OpenAICompatProvider(
        "local", ProviderSettings(base_url=server.base_url, timeout=5.0), sleep=lambda _: None
    ) as client:
        yield client


def texts(n: int) -> list[str]:
    return [f"passage number {i}" for i in range(n)]


def sizes(server: FakeOpenAI) -> list[int]:
    return [len(r.inputs) for r in server.embedding_requests]


# ── a malformed answer splits its batch ─────────────────────────────────────────


@pytest.mark.parametrize(
    ("kind", "detail"),
    [
        ("malformed_json", "the server's answer is not JSON"),
        ("wrong_count", "response had 0 vectors for 1 inputs"),
        ("extra_vector", "response had 2 vectors for 1 inputs"),
        ("not_object", "expected a JSON object with a 'data' list, got a JSON array"),
    ],
)
def test_only_the_input_that_breaks_the_answer_fails(server, provider, kind, detail):
    inputs = texts(10)
    inputs[6] += " BREAKS-THE-SERVER"
    server.poison = {"BREAKS-THE-SERVER": kind}
    result = provider.embed(inputs, MODEL, on_input_error="collect")

    assert [f.index for f in result.failures] == [6] and result.vectors[6] is None
    assert all(result.vectors[i] == FakeOpenAI.vector_for(inputs[i], 8) for i in range(10) if i != 6)
    # halves, then halves of the bad half, down to input 6 alone: every request counted
    assert sizes(server) == [10, 5, 5, 2, 1, 1, 3] and result.calls == 7
    error = result.failures[0].error
    assert isinstance(error, InvalidVectorError) and error.index == 6
    assert str(error).startswith(f"provider 'local', model '{MODEL}': input 6 failed alone: {detail}")


def test_a_one_off_malformed_answer_loses_nothing(server, provider):
    server.fail_next("malformed_json")
    inputs = texts(4)
    result = provider.embed(inputs, MODEL)
    assert result.failures == [] and result.vectors == [FakeOpenAI.vector_for(t, 8) for t in inputs]
    assert sizes(server) == [4, 2, 2] and result.calls == 3


def test_splitting_stops_at_log2_levels_when_every_answer_is_malformed(server, provider):
    server.fail_next("malformed_json", times=1000)
    result = provider.embed(texts(8), MODEL, on_input_error="collect")
    assert [f.index for f in result.failures] == list(range(8))
    assert all(v is None for v in result.vectors)
    # 8 -> 4+4 -> 2+2+2+2 -> eight singles: 3 levels below the first request, 15 in all
    assert sizes(server) == [8, 4, 2, 1, 1, 2, 1, 1, 4, 2, 1, 1, 2, 1, 1] and result.calls == 15


def test_in_raise_mode_the_lone_bad_input_raises(server, provider):
    inputs = texts(4)
    inputs[1] += " BAD"
    server.poison = {"BAD": "malformed_json"}
    with pytest.raises(InvalidVectorError, match="'local', model 'nomic-embed-text': input 1 failed alone") as caught:
        provider.embed(inputs, MODEL)
    assert caught.value.index == 1


# ── a bad vector fails its input without another call ──────────────────────────


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("inf", "contains NaN or infinity"),
        ("non_numeric", "contains something that is not a number"),
        ("short_vector", "has 7 dimensions, expected 8"),
    ],
)
def test_a_bad_vector_in_a_good_answer_fails_only_its_input(server, provider, kind, reason):
    inputs = texts(5)
    server.fail_next(kind, index=3)
    result = provider.embed(inputs, MODEL, expect_dimensions=8, on_input_error="collect")
    assert [f.index for f in result.failures] == [3]
    assert str(result.failures[0].error) == f"provider 'local', model '{MODEL}': the vector for input 3 {reason}"
    assert all(result.vectors[i] == FakeOpenAI.vector_for(inputs[i], 8) for i in (0, 1, 2, 4))
    assert result.calls == 1


def test_vectors_that_disagree_with_no_dimension_known_are_split_apart(server, provider):
    # the first answer mixes 8 and 7 numbers: nothing says which is right, so the batch
    # is split; the first vector accepted sets the length the others must have
    server.fail_next("short_vector", index=2)
    inputs = texts(4)
    result = provider.embed(inputs, MODEL, on_input_error="collect")
    assert sizes(server) == [4, 2, 2] and result.failures == []
    assert result.dimensions == 8


def test_a_whole_answer_of_the_wrong_dimension_names_expected_and_got(server, provider):
    server.dimensions = 12
    result = provider.embed(texts(3), MODEL, expect_dimensions=8, on_input_error="collect")
    assert [f.index for f in result.failures] == [0, 1, 2] and result.calls == 1  # splitting cannot fix it
    assert str(result.failures[0].error) == (
        f"provider 'local', model '{MODEL}': the vector for input 0 has 12 dimensions, expected 8"
    )


# ── the check before the store, for any provider ────────────────────────────────


def test_check_result_catches_what_any_provider_hands_back():
    result = EmbedResult([[1.0, 0.0], [1.0, 2.0, 3.0], [float("nan"), 1.0], None, [0.0, 0.0]], calls=1)
    checked = check_result(result, 5, provider="mine", model="m1", dimensions=2, on_input_error="collect")
    reasons = {f.index: str(f.error) for f in checked.failures}
    assert reasons == {
        1: "provider 'mine', model 'm1': the vector for input 1 has 3 dimensions, expected 2",
        2: "provider 'mine', model 'm1': the vector for input 2 contains NaN or infinity",
        3: "provider 'mine', model 'm1': the vector for input 3 is missing",
        4: "provider 'mine', model 'm1': the vector for input 4 is all zeros",
    }
    assert checked.vectors == [[1.0, 0.0], None, None, None, None]
    with pytest.raises(ProviderResponseError, match="'mine', model 'm1': response had 5 vectors for 6 inputs"):
        check_result(result, 6, provider="mine", model="m1")


class ShiftingProvider:
    """An in-process provider (registered by a program) whose model changed: 5 numbers."""

    def embed(self, texts, model, on_input_error="raise"):
        return EmbedResult([[1.0, 2.0, 3.0, 4.0, float(len(t))] for t in texts], calls=1)


def test_a_vector_of_another_dimension_never_reaches_the_kb(tmp_path, server):
    configure_provider(server, "local")
    folder = write_files(tmp_path / "docs", {"a.txt": "alpha text", "b.txt": "beta text"})
    with open_desk() as desk:
        desk.create_kb("k", model_id=MODEL, provider="local")
        assert desk.add("k", [folder / "a.txt"]).failed == []
        assert desk.kb("k").dimensions == 8
        desk.embedders.register("local", ShiftingProvider())  # same name, other model behind it
        report = desk.add("k", [folder / "b.txt"])
        assert len(report.failed) == 1 and report.failed[0][0] == "b.txt"
        assert (
            f"provider 'local', model '{MODEL}': the vector for input 0 has 5 dimensions, expected 8"
            in report.failed[0][1]
        )
        doc = next(d for d in desk.store.list_documents(desk.kb("k").id) if d.filename == "b.txt")
        assert doc.status == "error" and doc.error is not None and "5 dimensions, expected 8" in doc.error
        assert desk.kb("k").dimensions == 8


def test_ingestion_keeps_every_document_but_the_one_that_breaks_the_server(tmp_path, server):
    configure_provider(server, "local")
    files = {f"doc{i}.txt": f"Document {i} talks about subject {i}." for i in range(12)}
    files["doc7.txt"] = "This one trips the server: BREAKS-THE-SERVER"
    folder = write_files(tmp_path / "docs", files)
    server.poison = {"BREAKS-THE-SERVER": "wrong_count"}
    with open_desk() as desk:
        desk.create_kb("k", model_id=MODEL, provider="local")
        report = desk.add("k", [folder])
        assert [name for name, _ in report.failed] == ["doc7.txt"]
        assert "provider 'local', model 'nomic-embed-text': input" in report.failed[0][1]
        assert "failed alone: response had 0 vectors for 1 inputs" in report.failed[0][1]
        ready = {d.filename for d in desk.store.list_documents(desk.kb("k").id) if d.status == "ready"}
        assert ready == set(files) - {"doc7.txt"}
        assert report.embedding_calls == len(server.embedding_requests) > 1
