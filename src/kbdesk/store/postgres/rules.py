"""The SQL of seed 002's rules, as row security and kbdesk's guard functions write them.

One place for the expressions both :mod:`.rls` (policies) and :mod:`.guards` (the
delete function, which runs as the owner and writes the rules out) use: who the login
is (``kbdesk_uid()``), whether they are a system admin, and which KB rows they may read
or change.
"""

from __future__ import annotations

ROLE_USER = "kbdesk_user"
ROLE_ADMIN = "kbdesk_admin"
NO_USER = "00000000-0000-0000-0000-000000000000"  # the owner's rows in the embedding cache
ADMIN_TEAM_ROLES = ("admin", "owner")

UID = "(SELECT kbdesk_uid())"
ADMIN = "(SELECT kbdesk_is_admin())"


def visible(p: str = "") -> str:
    """The KB row (columns prefixed ``p``) is readable by the current user: a global KB
    by every kbdesk user while it is discoverable, by system admins always."""
    return (
        f"(({p}scope = 'global' AND {UID} IS NOT NULL AND ({p}discoverable OR {ADMIN})) "
        f"OR ({p}scope = 'personal' AND {p}owner_id = {UID}) "
        f"OR ({p}scope = 'team' AND ({ADMIN} OR {p}team_id = ANY ((SELECT kbdesk_team_ids(false))::uuid[]))))"
    )


def managed(p: str = "") -> str:
    """The KB row may be changed (and its documents) by the current user."""
    return (
        f"(({p}scope = 'personal' AND {p}owner_id = {UID}) "
        f"OR ({p}scope = 'team' AND ({ADMIN} OR {p}team_id = ANY ((SELECT kbdesk_team_ids(true))::uuid[]))) "
        f"OR ({p}scope = 'global' AND {ADMIN}))"
    )


# the KBs the current user may read / change (the inner select sees knowledge_bases
# through its own policies, so "readable" is written once)
READABLE_KBS = "ARRAY(SELECT k.id FROM knowledge_bases k)"
MANAGED_KBS = f"ARRAY(SELECT k.id FROM knowledge_bases k WHERE {managed('k.')})"
