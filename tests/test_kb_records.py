"""Knowledge base operations: create, find, list, rename, describe, recount, delete, audit."""

import pytest

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError


@pytest.fixture
def any_desk(engine_desk):
    """These scenarios hold on every engine: SQLite (sqlite-vec, numpy) and Postgres."""
    return engine_desk


def mark(desk) -> str:
    """The engine's SQL parameter mark."""
    return "?" if desk.store.kind == "sqlite" else "%s"


def test_create_keeps_the_seed_fields_and_defaults(any_desk):
    desk = any_desk
    kb = desk.create_kb(
        "Q4 Reports",
        "Quarterly financial reports",
        model_id="text-embedding-3-small",
        provider="openai",
        dimensions=1536,
    )
    assert kb.scope == "personal" and kb.owner_id and kb.team_id is None
    assert kb.status == "active" and kb.discoverable is True
    assert (kb.document_count, kb.chunk_count, kb.total_bytes) == (0, 0, 0)
    assert kb.embedding_config == {
        "provider": "openai",
        "model_id": "text-embedding-3-small",
        "dimensions": 1536,
        "chunk_size": 1000,
        "chunk_overlap": 200,
    }
    shape = kb.to_dict()
    assert set(shape) == {
        "id",
        "name",
        "description",
        "scope",
        "owner_id",
        "team_id",
        "embedding_config",
        "document_count",
        "chunk_count",
        "total_bytes",
        "status",
        "created_at",
        "updated_at",
    }
    assert shape["created_at"].endswith("Z") and "T" in shape["created_at"]


def test_chunking_is_overridable_per_kb(any_desk):
    desk = any_desk
    kb = desk.create_kb("small", chunk_size=300, chunk_overlap=30)
    assert (kb.chunk_size, kb.chunk_overlap) == (300, 30)
    with pytest.raises(InvalidInputError, match="chunk_overlap"):
        desk.create_kb("bad", chunk_size=100, chunk_overlap=100)


def test_names_are_unique_ignoring_case_and_validated(any_desk):
    desk = any_desk
    desk.create_kb("Notes")
    with pytest.raises(ConflictError, match="already exists"):
        desk.create_kb("notes")
    for bad in ("", "   ", "tab\there", "x" * 201):
        with pytest.raises(InvalidInputError):
            desk.create_kb(bad)


def test_find_by_id_name_or_prefix(any_desk):
    desk = any_desk
    kb = desk.create_kb("Engineering Wiki")
    assert desk.kb(kb.id).id == kb.id
    assert desk.kb("engineering wiki").id == kb.id
    assert desk.kb(kb.id[:8]).id == kb.id
    with pytest.raises(NotFoundError, match="no knowledge base named 'nope'"):
        desk.kb("nope")


def test_list_is_sorted_by_name(any_desk):
    desk = any_desk
    for name in ("beta", "Alpha", "gamma"):
        desk.create_kb(name)
    assert [kb.name for kb in desk.list_kbs()] == ["Alpha", "beta", "gamma"]


def test_rename_describe_and_audit_trail(any_desk):
    desk = any_desk
    kb = desk.create_kb("draft")
    desk.rename_kb("draft", "final")
    desk.describe_kb("final", "the finished one")
    with pytest.raises(ConflictError):
        desk.create_kb("other") and desk.rename_kb("other", "FINAL")
    got = desk.kb(kb.id)
    assert got.name == "final" and got.description == "the finished one"
    assert got.updated_at >= got.created_at
    actions = [(e["action"], e["target"]) for e in desk.store.audit_entries(kb.id)]
    assert actions == [("kb.create", "draft"), ("kb.update", "final"), ("kb.update", "final")]
    rename = desk.store.audit_entries(kb.id)[1]
    assert rename["details"] == {"name": {"from": "draft", "to": "final"}}
    assert rename["user_id"] == desk.store.local_user_id


def test_stats_follow_documents_and_recount_repairs_them(any_desk):
    desk = any_desk
    kb = desk.create_kb("stats")
    desk.add_document("stats", "a.txt", ["one", "two", "three"], size_bytes=100)
    doc = desk.add_document("stats", "b.txt", ["four"], size_bytes=50)
    kb = desk.kb("stats")
    assert (kb.document_count, kb.chunk_count, kb.total_bytes) == (2, 4, 150)
    desk.delete_document(doc.id)
    kb = desk.kb("stats")
    assert (kb.document_count, kb.chunk_count, kb.total_bytes) == (1, 3, 100)
    with desk.store.write() as conn:  # damage the denormalised stats
        conn.execute(f"UPDATE knowledge_bases SET chunk_count = 99 WHERE id = {mark(desk)}", (kb.id,))
    assert desk.recount("stats").chunk_count == 3


def test_vectors_must_match_the_kb_model(any_desk):
    desk = any_desk
    desk.create_kb("plain")
    with pytest.raises(InvalidInputError, match="no embedding model"):
        desk.add_document("plain", "a.txt", ["x"], vectors=[[1.0, 0.0]])
    desk.create_kb("embedded", model_id="m", dimensions=3)
    with pytest.raises(InvalidInputError, match="one vector per chunk"):
        desk.add_document("embedded", "a.txt", ["x"])
    with pytest.raises(InvalidInputError, match="2 dimensions, expected 3"):
        desk.add_document("embedded", "a.txt", ["x"], vectors=[[1.0, 0.0]])
    with pytest.raises(InvalidInputError, match="NaN"):
        desk.add_document("embedded", "a.txt", ["x"], vectors=[[1.0, float("nan"), 0.0]])
    with pytest.raises(InvalidInputError, match="all zeros"):
        desk.add_document("embedded", "a.txt", ["x"], vectors=[[0.0, 0.0, 0.0]])
    with pytest.raises(InvalidInputError, match="2 vectors for 1 chunks"):
        desk.add_document("embedded", "a.txt", ["x"], vectors=[[1, 0, 0], [0, 1, 0]])
    # nothing half-written by any of the refusals
    assert desk.kb("embedded").document_count == 0
    assert desk.store.connection().execute("SELECT count(*) FROM kb_chunks").fetchone()[0] == 0


def test_dimensions_are_learnt_from_the_first_vectors(any_desk):
    desk = any_desk
    desk.create_kb("learn", model_id="m")
    desk.add_document("learn", "a.txt", ["x"], vectors=[[3.0, 4.0]])
    assert desk.kb("learn").dimensions == 2
    with pytest.raises(InvalidInputError, match="3 dimensions, expected 2"):
        desk.add_document("learn", "b.txt", ["y"], vectors=[[1.0, 2.0, 3.0]])


def test_team_scope_needs_a_team(desk):
    with pytest.raises(InvalidInputError, match="team id"):
        desk.create_kb("t", scope="team")
    with pytest.raises(NotFoundError, match="no team"):
        desk.create_kb("t", scope="team", team_id="missing")
    with desk.store.write() as conn:
        conn.execute("INSERT INTO teams(id, name) VALUES ('team1', 'Eng')")
    kb = desk.create_kb("t", scope="team", team_id="team1")
    assert kb.scope == "team" and kb.owner_id is None and kb.team_id == "team1"
    g = desk.create_kb("g", scope="global")
    assert g.owner_id is None and g.team_id is None


def test_chunk_settings_can_change_and_are_audited(any_desk):
    desk = any_desk
    desk.create_kb("tunable")
    kb = desk.edit_kb("tunable", chunk_size=400, chunk_overlap=40)
    assert (kb.chunk_size, kb.chunk_overlap) == (400, 40)
    last = desk.store.audit_entries(kb.id)[-1]
    assert last["details"]["embedding_config"]["to"]["chunk_size"] == 400
    with pytest.raises(InvalidInputError, match="chunk_overlap"):
        desk.edit_kb("tunable", chunk_overlap=400)


def test_new_kbs_take_the_embedding_role_unless_keyword_only(tmp_path, kbdesk_home):
    from kbdesk import open_desk
    from kbdesk.config import parse_config

    config = parse_config(
        {
            "providers": {"local": {"kind": "ollama"}},
            "roles": {"embedding": {"provider": "local", "model": "nomic-embed-text"}},
        }
    )
    with open_desk(config=config) as desk:
        kb = desk.create_kb("default-model")
        assert (kb.embedding_config["provider"], kb.model_id) == ("local", "nomic-embed-text")
        assert desk.create_kb("plain", keyword_only=True).model_id is None


def test_a_role_must_name_a_configured_provider():
    from kbdesk.config import parse_config
    from kbdesk.errors import ConfigError

    with pytest.raises(ConfigError, match=r"roles.chat.provider names 'nope'"):
        parse_config({"roles": {"chat": {"provider": "nope", "model": "m"}}})


def test_chunk_neighbours(any_desk):
    desk = any_desk
    desk.create_kb("seq")
    doc = desk.add_document("seq", "a.txt", ["zero", "one", "two", "three"])
    around = desk.store.chunk_neighbours(doc.id, 2)
    assert [(c["chunk_index"], c["content"], c["current"]) for c in around] == [
        (1, "one", False),
        (2, "two", True),
        (3, "three", False),
    ]
