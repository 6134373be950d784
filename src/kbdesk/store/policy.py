"""Who may do what: the access policy the store core consults before it reads or changes.

A local database has one user, who may do everything (:class:`LocalPolicy`). A team
server checks seed 002's scopes (:class:`kbdesk.store.postgres.access.ScopePolicy`) —
there the checks word the refusals, and the database's row security is the authority.
"""

from __future__ import annotations

from typing import Any

from kbdesk.models import KnowledgeBase


class LocalPolicy:
    """Everything is allowed; every KB is visible and in the picker."""

    def check_create(self, scope: str, team_id: str | None) -> None:
        return None

    def check_manage(self, kb: KnowledgeBase) -> None:
        return None

    def check_discoverable(self, kb: KnowledgeBase) -> None:
        return None

    def can_see(self, kb: KnowledgeBase) -> bool:
        return True

    def visible(self, alias: str = "") -> tuple[str, list[Any]]:
        """A WHERE fragment (``?`` placeholders) selecting the KBs the user can see."""
        return "1 = 1", []

    def picker(self, alias: str = "") -> tuple[str, list[Any]]:
        """A WHERE fragment selecting the KBs the user may pick by name."""
        return "1 = 1", []
