"""Scopes, permissions and the discoverable flag in Postgres mode (seed 002), refusals included,
as kbdesk checks them for the database's owner: these desks connect as the superuser,
whom row-level security does not bind, so kbdesk acts as each config's [identity] (a
local single-user server). Logins of their own, with the database enforcing the same
rules: test_pg_security.py."""

from typing import Any

import pytest

from helpers import axis
from kbdesk import open_desk
from kbdesk.config import parse_config
from kbdesk.errors import NotFoundError
from kbdesk.store.postgres import AccessDeniedError
from pg_support import sql


@pytest.fixture
def server(pg_uri, kbdesk_home):
    """A server with team Eng; desks for alice (member), bob (Eng admin), root (system
    admin) and eve (no team), each with the identity from its config."""
    team = str(sql(pg_uri, "INSERT INTO teams(name) VALUES ('Eng') RETURNING id")[0][0])
    people = {
        "alice": {"username": "alice", "teams": {"Eng": "member"}},
        "bob": {"username": "bob", "teams": {team: "admin"}},
        "root": {"username": "root", "admin": True},
        "eve": {"username": "eve"},
    }
    desks: dict[str, Any] = {  # each person's desk, and "team": Eng's id
        name: open_desk(pg_uri, config=parse_config({"identity": ident})) for name, ident in people.items()
    }
    desks["team"] = team
    yield desks
    for name in people:
        desks[name].close()


def names(desk):
    return [kb.name for kb in desk.list_kbs()]


def test_the_owners_identity_comes_from_the_config(server, pg_uri):
    alice, root = server["alice"], server["root"]
    assert alice.store.describe()["identity"] == "config"
    assert alice.store.identity.username == "alice" and not alice.store.identity.admin
    assert root.store.identity.admin and root.store.local_user_id != alice.store.local_user_id
    assert alice.store.identity.teams == {server["team"]: "member"}  # the team named in config, resolved
    with open_desk(pg_uri, config=parse_config({"identity": {"username": "alice"}})) as again:
        assert again.store.local_user_id == alice.store.local_user_id  # the same name is the same user
    users = dict(sql(pg_uri, "SELECT username, is_admin FROM users"))
    assert users["alice"] is False and users["root"] is True
    kb = alice.create_kb("mine")
    assert kb.owner_id == alice.store.local_user_id
    assert alice.store.audit_entries(kb.id)[0]["user_id"] == alice.store.local_user_id


def test_personal_kbs_are_their_owners_alone(server):
    alice, bob, root = server["alice"], server["bob"], server["root"]
    kb = alice.create_kb("Notes")
    alice.add_document("Notes", "diary.txt", ["my secret plans"])
    assert names(alice) == ["Notes"] and names(bob) == [] and names(root) == []
    for other in (bob, root):
        with pytest.raises(NotFoundError):
            other.kb("Notes")
        with pytest.raises(NotFoundError):
            other.kb(kb.id)
        with pytest.raises(NotFoundError):
            other.store.get_kb(kb.id)
        with pytest.raises(NotFoundError):  # not there for them: the same answer as for no KB at all
            other.store.delete_kb(kb.id)
        with pytest.raises(NotFoundError):
            other.store.add_document(kb.id, "intrusion.txt", ["x"])
    # everyone may have a personal KB of the same name
    assert bob.create_kb("notes").name == "notes" and names(alice) == ["Notes"]
    assert alice.search(["Notes"], "secret plans").results[0].source == "diary.txt"


def test_team_kbs_are_created_by_team_admins_and_seen_by_members(server):
    alice, bob, root, eve, team = server["alice"], server["bob"], server["root"], server["eve"], server["team"]
    with pytest.raises(AccessDeniedError, match="only an admin of team"):
        alice.create_kb("Runbooks", scope="team", team_id=team)  # a member, not an admin
    with pytest.raises(AccessDeniedError):
        eve.create_kb("Runbooks", scope="team", team_id=team)
    kb = bob.create_kb("Runbooks", scope="team", team_id=team, model_id="m", dimensions=8)
    assert kb.owner_id is None and kb.team_id == team
    bob.add_document("Runbooks", "deploy.md", ["Deploys go out on Tuesdays."], vectors=[axis(0)])
    assert names(alice) == ["Runbooks"] and names(eve) == []
    assert alice.search(["Runbooks"], "when do deploys go out", mode="keyword").results[0].source == "deploy.md"
    with pytest.raises(NotFoundError):
        eve.kb("Runbooks")
    with pytest.raises(AccessDeniedError, match="only an admin of team 'Eng'"):
        alice.rename_kb("Runbooks", "Mine now")
    with pytest.raises(AccessDeniedError, match="only an admin of team 'Eng'"):
        alice.add_document("Runbooks", "x.md", ["x"], vectors=[axis(1)])
    with pytest.raises(AccessDeniedError):
        alice.delete_kb("Runbooks")
    assert root.create_kb("Oncall", scope="team", team_id=team).scope == "team"  # a system admin may too
    bob.describe_kb("Runbooks", "how we ship")
    assert alice.kb("Runbooks").description == "how we ship"


def test_global_kbs_are_created_by_system_admins_and_seen_by_all(server):
    alice, root, eve = server["alice"], server["root"], server["eve"]
    with pytest.raises(AccessDeniedError, match="only a system admin"):
        alice.create_kb("Handbook", scope="global")
    kb = root.create_kb("Handbook", scope="global")
    assert kb.owner_id is None and kb.team_id is None
    root.add_document("Handbook", "leave.md", ["Holidays are booked in the portal."])
    assert "Handbook" in names(alice) and "Handbook" in names(eve)
    assert eve.search(["Handbook"], "book holidays").results[0].source == "leave.md"
    with pytest.raises(AccessDeniedError, match="only a system admin"):
        alice.rename_kb("Handbook", "Mine")
    with pytest.raises(AccessDeniedError):
        eve.delete_kb("Handbook")
    # nobody may name a KB like one everybody sees
    with pytest.raises(Exception, match="already exists"):
        alice.create_kb("handbook")


def test_a_hidden_global_kb_is_there_for_system_admins_only(server):
    alice, bob, root = server["alice"], server["bob"], server["root"]
    kb = root.create_kb("Legal", scope="global")
    root.add_document("Legal", "nda.md", ["Mutual NDAs are signed by legal."])
    with pytest.raises(AccessDeniedError, match="only the owner"):
        alice.edit_kb("Legal", discoverable=False)
    root.edit_kb("Legal", discoverable=False)
    assert "Legal" not in names(alice) and "Legal" in names(root)  # an admin still manages it
    for ref in ("Legal", kb.id, kb.id[:8]):
        with pytest.raises(NotFoundError):
            alice.kb(ref)
    with pytest.raises(NotFoundError):
        alice.store.get_kb(kb.id)  # what a persona or channel binding resolves: not there either
    assert root.search(["Legal"], "who signs NDAs", mode="keyword").results[0].source == "nda.md"
    # the owner may change the flag of a personal KB; it stays in the owner's picker
    alice.create_kb("Private")
    assert alice.edit_kb("Private", discoverable=False).discoverable is False
    assert "Private" in names(alice)
    # a team KB has no owner: only a system admin may change its flag
    bob.create_kb("Team docs", scope="team", team_id=server["team"])
    with pytest.raises(AccessDeniedError, match="only the owner"):
        bob.edit_kb("Team docs", discoverable=False)
    root_view = root.store.get_kb(bob.kb("Team docs").id)
    assert root.store.update_kb(root_view.id, discoverable=False).discoverable is False
    assert root.store.audit_entries(kb.id)[-1]["details"] == {"discoverable": {"from": True, "to": False}}
