"""The chat's records on every engine that keeps them (the SQLite file and PostgreSQL):
conversations, messages and tool calls, KB toggles, personas, projects, settings."""

import re
import time

import pytest

from helpers import chat_store
from kbdesk import open_desk
from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def store(any_cdesk):
    return any_cdesk.store


def test_conversations_are_found_by_id_prefix_or_title_and_listed_newest_first(store):
    first = store.create_conversation("Plan\x1b[31m Q3\n")
    assert first.title == "Plan [31m Q3" and first.message_count == 0  # no control characters
    assert ISO.match(first.created_at) and ISO.match(first.updated_at)
    second = store.create_conversation("Budget")
    assert store.find_conversation(first.id).id == first.id
    assert store.find_conversation(first.id[:6].upper()).id == first.id
    assert store.find_conversation("budget").id == second.id  # a title, any case
    store.create_conversation("Budget")
    with pytest.raises(InvalidInputError, match="more than one conversation"):
        store.find_conversation("budget")
    for ref in ("nothing", "", "zz-not-an-id"):
        with pytest.raises(NotFoundError):
            store.find_conversation(ref)
    time.sleep(0.005)  # timestamps are kept to the millisecond
    store.add_message(first.id, "user", "hello")  # a new message moves it to the top
    listed = store.list_conversations()
    assert listed[0].id == first.id and listed[0].message_count == 1 and len(listed) == 3


def test_a_conversation_changes_and_goes_with_its_messages(store):
    conv = store.create_conversation("draft")
    assert store.update_conversation(conv.id, title="final", retrieval="always").retrieval == "always"
    assert store.update_conversation(conv.id, retrieval=None).retrieval is None  # the next level decides
    with pytest.raises(InvalidInputError, match="retrieval must be one of"):
        store.update_conversation(conv.id, retrieval="sometimes")
    assert store.get_conversation(conv.id).title == "final"
    msg = store.add_message(conv.id, "assistant", "", tool_calls=[("c1", "kb_search", '{"query": "x"}')])
    assert store.delete_conversation(conv.id).id == conv.id
    with pytest.raises(NotFoundError):
        store.find_conversation(conv.id)
    with pytest.raises(NotFoundError):
        store.get_message(msg.id)


def test_messages_keep_order_tool_calls_statuses_and_sources(store):
    conv = store.create_conversation("talk")
    store.add_message(conv.id, "user", "When do backups run?")
    asked = store.add_message(
        conv.id,
        "assistant",
        "Let me look.",
        model="tiny",
        tool_calls=[("call_1", "kb_search", '{"query": "backups"}'), ("call_2", "note_search", '{"query": "backups"}')],
    )
    assert [(c.call_id, c.status) for c in asked.tool_calls] == [("call_1", "pending"), ("call_2", "pending")]
    store.set_tool_call_status(asked.id, "call_1", "ok")
    store.set_tool_call_status(asked.id, "call_2", "error", "no notes")
    store.add_message(conv.id, "tool", "results", tool_call_id="call_1")
    answer = store.add_message(conv.id, "assistant", "Nightly", status="cancelled")
    store.update_message(
        answer.id,
        content="Nightly at two.",
        status="complete",
        sources=[{"label": "guide.md", "kb": "Docs", "score": 0.8}],
    )
    with pytest.raises(InvalidInputError):
        store.add_message(conv.id, "system", "no such role")
    with pytest.raises(InvalidInputError):
        store.update_message(answer.id, status="lost")
    saved = store.messages(conv.id)
    assert [m.role for m in saved] == ["user", "assistant", "tool", "assistant"]
    calls = saved[1].tool_calls
    assert [(c.call_id, c.name, c.status, c.error) for c in calls] == [
        ("call_1", "kb_search", "ok", None),
        ("call_2", "note_search", "error", "no notes"),
    ]
    assert saved[1].model == "tiny" and saved[2].tool_call_id == "call_1"
    assert (saved[3].content, saved[3].status) == ("Nightly at two.", "complete")
    assert saved[3].sources == [{"label": "guide.md", "kb": "Docs", "score": 0.8}]
    assert all(ISO.match(m.created_at) for m in saved)
    assert [m.content for m in store.messages(conv.id, limit=2)] == ["results", "Nightly at two."]
    assert store.get_message(asked.id).to_dict()["tool_calls"][1]["error"] == "no notes"
    assert store.find_conversation(conv.id).message_count == 4
    # text from documents may hold NUL, which Postgres refuses: the rest is kept
    kept = store.add_message(conv.id, "tool", "before\x00after", tool_call_id="call_3")
    assert kept.content.replace("\x00", "") == "beforeafter"


def test_kb_toggles_of_a_conversation(any_cdesk, store):
    lower, upper, last = (any_cdesk.create_kb(n) for n in ("beta", "Alpha", "gamma"))
    conv = store.create_conversation("toggles")
    store.set_channel_kb(conv.id, lower.id, True)
    store.set_channel_kb(conv.id, upper.id, False)
    store.set_channel_kb(conv.id, lower.id, False)  # switched again: one row
    # by name, whatever the case
    assert [(b["kb_name"], b["enabled"]) for b in store.channel_kbs(conv.id)] == [("Alpha", False), ("beta", False)]
    store.set_channel_kbs(conv.id, [last.id, upper.id], disabled=[lower.id, last.id])  # named twice: on wins
    assert [(b["kb_name"], b["enabled"], b["document_count"]) for b in store.channel_kbs(conv.id)] == [
        ("Alpha", True, 0),
        ("beta", False, 0),
        ("gamma", True, 0),
    ]
    any_cdesk.store.delete_kb(last.id)
    assert [b["kb_name"] for b in store.channel_kbs(conv.id)] == ["Alpha", "beta"]


def test_personas_with_their_kbs_and_rules(any_cdesk, store):
    docs, wiki = any_cdesk.create_kb("Docs"), any_cdesk.create_kb("Wiki")
    ops = store.create_persona(
        "Ops", "You run operations.", provider="local", model="tiny", retrieval="tool", max_tokens=300
    )
    assert (ops.name, ops.system_prompt, ops.model, ops.retrieval, ops.max_tokens) == (
        "Ops",
        "You run operations.",
        "tiny",
        "tool",
        300,
    )
    with pytest.raises(ConflictError, match="a persona named 'OPS' already exists"):
        store.create_persona("OPS")
    with pytest.raises(InvalidInputError):
        store.create_persona("Bad", max_tokens=0.5)
    with pytest.raises(InvalidInputError):
        store.create_persona("  ")
    store.create_persona("analyst")
    updated = store.update_persona(ops.id, kbs=[(wiki.id, True), (docs.id, False)], model=None, retrieval=None)
    assert updated.kbs == [(docs.id, False), (wiki.id, True)]  # by KB name
    assert updated.model is None and updated.provider == "local" and updated.retrieval is None
    assert updated.to_dict()["knowledge_bases"] == [
        {"kb_id": docs.id, "auto_search": False},
        {"kb_id": wiki.id, "auto_search": True},
    ]
    with pytest.raises(ConflictError):
        store.update_persona(ops.id, name="Analyst")
    assert store.update_persona(ops.id, name="ops").name == "ops"  # its own name in another case
    assert [p.name for p in store.list_personas()] == ["analyst", "ops"]
    assert store.find_persona("OPS").id == ops.id and store.find_persona(ops.id[:5]).id == ops.id
    conv = store.create_conversation("with persona", persona_id=ops.id)
    store.delete_persona(ops.id)
    assert store.get_conversation(conv.id).persona_id is None
    with pytest.raises(NotFoundError):
        store.find_persona("ops")


def test_projects_bind_kbs_and_group_conversations(any_cdesk, store):
    docs = any_cdesk.create_kb("Docs")
    launch = store.create_project("Launch", "The spring launch")
    with pytest.raises(ConflictError):
        store.create_project("launch")
    launch = store.update_project(launch.id, kbs=[docs.id, docs.id], description="Spring")
    assert launch.kbs == [docs.id] and launch.description == "Spring"
    inside = store.create_conversation("in", project_id=launch.id)
    store.create_conversation("out")
    assert [c.id for c in store.list_conversations(launch.id)] == [inside.id]
    assert [p.name for p in store.list_projects()] == ["Launch"]
    any_cdesk.store.delete_kb(docs.id)
    assert store.find_project("launch").kbs == []
    store.delete_project(launch.id)
    assert store.get_conversation(inside.id).project_id is None and store.list_projects() == []


def test_settings_are_kept(store):
    assert store.get_setting("chat.ignores_forcing") is None
    store.set_setting("chat.ignores_forcing", '["local/tiny"]')
    store.set_setting("chat.ignores_forcing", '["local/tiny", "local/small"]')
    assert store.get_setting("chat.ignores_forcing") == '["local/tiny", "local/small"]'


def test_note_keyword_scores_are_the_same_bm25_on_both_engines(pg_uri, tmp_path):
    """Notes rank by FTS5's bm25 on SQLite and by the same formula over their tsvector
    on Postgres: same words, same scores."""
    texts = [
        ("Groceries", "Buy milk, bread and milk powder"),
        ("", "The milk of the cat is warm"),
        ("Cat care", "Brush the cat; feed the cats twice"),
        ("Taxes", "Send the invoice before the deadline"),
    ]
    scores = []
    for target in (tmp_path / "kb.db", pg_uri):
        with open_desk(target) as desk:
            notes_store = chat_store(desk)
            ids = [notes_store.create_note(content, title).content for title, content in texts]
            by_text = {}
            for query in ("milk", "cat milk", "cats", "the"):
                found = notes_store.note_keyword_candidates(query, 10)
                notes = notes_store.notes_by_id([i for i, _ in found])
                by_text[query] = [(notes[i].content, round(s, 6)) for i, s in found]
            assert len(ids) == 4
            scores.append(by_text)
    sqlite, postgres = scores
    assert sqlite["milk"] and sqlite["cats"]
    assert postgres == sqlite


def test_a_note_is_found_by_the_plain_spelling_of_its_ligatures_and_wide_letters(store):
    note = store.create_note("Pro\ufb01ling the ingestion: \uff26\uff34\uff33\uff15 rebuilds are slow.", "Perf")
    assert note.content == "Profiling the ingestion: FTS5 rebuilds are slow."  # kept in NFKC
    for query in ("profiling", "FTS5 rebuilds"):
        assert [n for n, _ in store.note_keyword_candidates(query, 5)] == [note.id]
