"""Notes: keyword search, semantic search merged without duplicates, the note_search tool."""

import json

import numpy as np
import pytest

from chat_support import desk_on, write_config
from kbdesk import open_desk
from kbdesk.chat import NOTE_SEARCH_TOOL
from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.providers import EmbedResult

CONCEPTS = [("cat", "feline", "kitten"), ("dog", "puppy"), ("invoice", "tax")]


class ConceptEmbedder:
    """An in-process embedder (plugged in through Embedders.register): one axis per concept."""

    def __init__(self):
        self.calls = []

    def embed(self, texts, model, on_input_error="raise"):
        self.calls.append(list(texts))
        vectors = []
        for text in texts:
            v = np.full(len(CONCEPTS) + 1, 0.05)
            for axis, words in enumerate(CONCEPTS):
                v[axis] += sum(text.lower().count(w) for w in words)
            vectors.append((v / np.linalg.norm(v)).tolist())
        return EmbedResult(vectors, calls=1)


@pytest.fixture
def notes_desk(request, chat_engine, chat_server, kbdesk_home):
    write_config(chat_server, embedding_model="concepts")
    desk = desk_on(request, chat_engine)
    embedder = ConceptEmbedder()
    desk.embedders.register("local", embedder)
    yield desk, embedder
    desk.close()


def test_note_crud_and_keyword_index(any_cdesk):
    cdesk = any_cdesk
    notes = cdesk.chat().notes
    note, warning = notes.add("Buy milk and bread", title="Groceries")
    assert warning is None  # no embedding model set: fine, keyword search still works
    assert [h.note.id for h in notes.search("milk").hits] == [note.id]
    assert [h.note.id for h in notes.search("groceries").hits] == [note.id]  # titles are indexed too
    edited, _ = notes.edit(note.id[:8], content="Buy cheese")
    assert edited.content == "Buy cheese" and notes.search("milk").hits == []
    assert notes.search("cheese").hits[0].matched == ("keyword",)
    notes.remove(note.id)
    assert notes.search("cheese").hits == [] and cdesk.store.note_count() == 0
    with pytest.raises(NotFoundError):
        notes.get(note.id)
    with pytest.raises(InvalidInputError):
        notes.add("   \x00 ")
    query = 'milk" OR content:* NEAR('  # the user's words are never FTS syntax
    assert notes.search(query).hits == []


def test_semantic_search_merges_without_duplicates(notes_desk):
    desk, embedder = notes_desk
    notes = desk.chat().notes
    brush, _ = notes.add("Brush the cat every week", title="Feline care")
    pantry, _ = notes.add("Cat food and dog food are in the pantry")
    kitten, _ = notes.add("Kittens need their vaccinations in spring")
    notes.add("Send the invoice before the tax deadline")
    assert len(embedder.calls) == 4  # each note embedded when written

    keyword = notes.search("cat")
    assert {h.note.id for h in keyword.hits} == {brush.id, pantry.id}
    merged = notes.search("cat", semantic=True)
    ids = [h.note.id for h in merged.hits]
    assert len(ids) == len(set(ids)) == 3 and set(ids) == {brush.id, pantry.id, kitten.id}
    by_id = {h.note.id: h for h in merged.hits}
    assert by_id[brush.id].matched == ("keyword", "semantic") and ids[0] == brush.id
    assert by_id[kitten.id].matched == ("semantic",)


def test_notes_written_without_a_model_are_embedded_at_the_next_semantic_search(chat_server, kbdesk_home):
    write_config(chat_server)
    with open_desk(backend="numpy") as desk:
        note, _ = desk.chat().notes.add("The lighthouse keeper retires in May")
        assert desk.chat().notes.search("lighthouse", semantic=True).notes[0].startswith("no embedding model")
    write_config(chat_server, embedding_model="text-embedding-3-small")
    with open_desk(backend="numpy") as desk:
        found = desk.chat().notes.search("The lighthouse keeper retires in May", semantic=True)
    inputs = [r.body["input"] for r in chat_server.requests if r.path.endswith("/embeddings")]
    assert inputs == [["The lighthouse keeper retires in May"]] * 2  # the backlog note, then the query
    assert found.hits[0].note.id == note.id and found.hits[0].matched == ("keyword", "semantic")


def test_note_search_tool_in_chat(notes_desk, chat_server):
    desk, _ = notes_desk
    kitten, _ = desk.chat().notes.add("Kittens need their vaccinations in spring", title="Vet")
    chat_server.reply(tool_calls=[("note_search", {"query": "feline health", "semantic": True})])
    chat_server.reply("Vaccinate the kittens in spring.")
    answer = desk.chat().ask(None, "What about the kittens?")
    first, second = chat_server.chat_requests
    assert first["tools"] == [NOTE_SEARCH_TOOL]  # no KB: only the notes tool
    assert "note_search" in first["messages"][0]["content"]
    tool = second["messages"][-1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_1"
    result = json.loads(tool["content"][tool["content"].index("{") : tool["content"].rindex("}") + 1])
    assert result["semantic"] is True and result["results"][0]["id"] == kitten.id
    assert [s.label for s in answer.sources] == ["note: Vet"]
    assert desk.chat().open_source(answer.sources[0])[0]["content"] == kitten.content
