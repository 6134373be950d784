"""KB resolution chain (persona → project → conversation → personal), toggles, the hint."""

import json

import pytest

from chat_support import add_doc
from fake_openai import FakeOpenAI
from kbdesk.chat import kb_hint
from kbdesk.errors import InvalidInputError


@pytest.fixture
def world(any_cdesk):
    cdesk = any_cdesk
    for name, scope, discoverable in [
        ("Personal One", "personal", True),
        ("Personal Two", "personal", True),
        ("Personal Three", "personal", True),
        ("Hidden", "personal", False),
        ("Hidden Unbound", "personal", False),
        ("Global", "global", True),
        ("Global Two", "global", True),
    ]:
        cdesk.store.create_kb(name, scope=scope, discoverable=discoverable)
        add_doc(cdesk, name, f"{name.lower().replace(' ', '-')}.txt", f"launch notes kept in {name}")
    add_doc(cdesk, "Global", "extra.txt", "more launch notes")
    chat = cdesk.chat()
    chat.create_persona("Ops", "You run operations.", kbs=["Personal Two"], auto_search=["Hidden"])
    chat.create_project("Launch", kbs=["Global", "Personal Two"])
    conv = chat.new_conversation("planning", persona="Ops", project="Launch")
    chat.set_kb_enabled(conv.id, "Global Two", True)
    chat.set_kb_enabled(conv.id, "Personal One", False)
    return cdesk, chat, conv


def test_resolution_order_and_origins(world):
    _desk, chat, conv = world
    active = chat.active_kbs(conv.id)
    assert [(a.kb.name, a.origin, a.auto_search) for a in active] == [
        ("Hidden", "persona", True),
        ("Personal Two", "persona", False),  # the persona comes first, even though the project binds it too
        ("Global", "project", False),
        ("Global Two", "conversation", False),
        ("Personal Three", "personal", False),  # Personal One is switched off here; Hidden Unbound is hidden
    ]
    assert (
        chat.hint(conv.id)
        == kb_hint(active)
        == (
            "You have access to the following knowledge bases:\n"
            '- "Hidden" (1 document)\n- "Personal Two" (1 document)\n- "Global" (2 documents)\n'
            '- "Global Two" (1 document)\n- "Personal Three" (1 document)\n'
            "Use the kb_search tool to find relevant information from these sources."
        )
    )
    # a conversation without persona or project: personal, discoverable KBs only
    plain = chat.new_conversation("plain")
    assert [a.kb.name for a in chat.active_kbs(plain.id)] == ["Personal One", "Personal Three", "Personal Two"]


def test_toggle_popup_rows_and_rules(world):
    desk, chat, conv = world
    rows = {t.name: t for t in chat.kb_toggles(conv.id)}
    assert "Hidden Unbound" not in rows  # not discoverable and not bound: never offered
    assert rows["Hidden"].enabled and rows["Hidden"].locked and rows["Hidden"].auto_search
    assert rows["Global"].locked and rows["Global"].origin == "project" and rows["Global"].document_count == 2
    assert not rows["Personal One"].enabled and not rows["Personal One"].locked
    assert rows["Global Two"].origin == "conversation"
    with pytest.raises(InvalidInputError, match="persona"):
        chat.set_kb_enabled(conv.id, "Personal Two", False)
    with pytest.raises(InvalidInputError, match="not discoverable"):
        chat.set_kb_enabled(conv.id, "Hidden Unbound", True)

    rows = {t.name: t for t in chat.set_kbs(conv.id, ["Personal One"])}  # the seed's PUT: exactly these
    assert rows["Personal One"].enabled and not rows["Global Two"].enabled and not rows["Personal Three"].enabled
    assert rows["Hidden"].enabled and rows["Global"].enabled  # bindings are not the conversation's to change
    assert {b["kb_name"]: b["enabled"] for b in desk.store.channel_kbs(conv.id)} == {
        "Personal One": True,
        "Personal Three": False,
        "Global Two": False,
    }


def test_kb_search_searches_exactly_the_resolved_kbs(world, chat_server):
    _desk, chat, conv = world
    chat_server.reply(tool_calls=[("kb_search", {"query": "launch notes", "max_results": 20})])
    chat_server.reply("Done.")
    answer = chat.ask(conv.id, "Where are the launch notes?")
    first, second = chat_server.chat_requests
    assert first["messages"][0]["content"].startswith("You run operations.")
    tool = second["messages"][-1]["content"]
    result = json.loads(tool[tool.index("{") : tool.rindex("}") + 1])
    names = ["Hidden", "Personal Two", "Global", "Global Two", "Personal Three"]
    assert result["searched_kbs"] == names
    assert {r["kb"] for r in result["results"]} == set(names)
    assert {s.via for s in answer.sources} == {"auto_search", "kb_search"}


def test_query_is_embedded_once_per_model(any_cdesk, chat_server):
    cdesk = any_cdesk
    for name, model in [("A", "emb-a"), ("B", "emb-b"), ("A2", "emb-a")]:
        cdesk.create_kb(name, model_id=model, provider="local", dimensions=8)
        text = f"the lighthouse keeper of {name}"
        cdesk.add_document(name, f"{name}.txt", [text], vectors=[FakeOpenAI.vector_for(text, 8)])
    chat_server.reply(tool_calls=[("kb_search", {"query": "who keeps the lighthouse"})])
    chat_server.reply("Found.")
    answer = cdesk.chat().ask(None, "Who keeps the lighthouse?")
    assert answer.status == "complete" and answer.tool_calls[0].ok
    embedded = [r.body for r in chat_server.requests if r.path.endswith("/embeddings")]
    assert sorted(b["model"] for b in embedded) == ["emb-a", "emb-b"]  # A and A2 share one embedding
    assert all(b["input"] == ["who keeps the lighthouse"] for b in embedded)
    tool = chat_server.chat_requests[1]["messages"][-1]["content"]
    result = json.loads(tool[tool.index("{") : tool.rindex("}") + 1])
    assert sorted(result["searched_kbs"]) == ["A", "A2", "B"]
