"""Who is calling: ``Authorization: Bearer <token>``, checked on every request.

No token, an unknown or revoked one, or one whose user is gone: 401, and nothing else
is said. A valid token whose permissions do not cover the request: 403 naming the
permission. What the user may see and change is the store's business (their identity
on Postgres, the one user of a SQLite file).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from fastapi import Request

from kbdesk.errors import NotFoundError
from kbdesk.models import KnowledgeBase
from kbdesk.serve.errors import ApiError
from kbdesk.serve.users import Lease, TokenUserGone
from kbdesk.store.tokens import ApiToken

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="kbdesk"'}


@dataclass
class Caller:
    token: ApiToken
    lease: Lease

    @property
    def desk(self) -> Any:
        return self.lease.desk

    @property
    def identity(self) -> Any:
        """On a team server, whom the scope rules judge (None on SQLite)."""
        return self.lease.identity

    def require(self, permission: str) -> None:
        if not self.token.allows(permission):
            raise ApiError(
                403,
                f"this token does not have the {permission} permission (a token made with "
                f"kbdesk token create --permission {permission} has)",
            )

    def kb(self, kb_id: str) -> KnowledgeBase:
        """The KB of that exact id, if this user may reach it (404 otherwise, the same
        answer for a KB that does not exist and for one that is someone else's)."""
        if not is_uuid(kb_id):
            raise ApiError(404, f"no knowledge base {kb_id!r}")
        try:
            kb = self.desk.kb(kb_id)
        except NotFoundError:
            raise ApiError(404, f"no knowledge base {kb_id!r}") from None
        if kb.id.lower() != kb_id.lower():
            raise ApiError(404, f"no knowledge base {kb_id!r}")
        return kb

    def check_can_change(self, kb: KnowledgeBase) -> None:
        """Refuse early (before any byte is stored) what the store would refuse anyway."""
        if self.identity is not None:
            self.desk.store.policy.check_manage(kb)

    def check_can_create(self, scope: str, team_id: str | None) -> None:
        """The scope rules for a new KB, worded for this user (a kbdesk user of the
        database is told how an administrator grants a right, not to edit a config)."""
        if self.identity is not None:
            self.desk.store.policy.check_create(scope, team_id)


async def caller(request: Request) -> AsyncIterator[Caller]:
    """The FastAPI dependency of every endpoint but the index and the OpenAPI document:
    the token checked (in a worker thread: it reads the database), the user's desk
    leased for the request and given back after it."""
    header = request.headers.get("authorization", "")
    scheme, _, secret = header.partition(" ")
    secret = secret.strip()
    if not header:
        raise ApiError(
            401, "send a token: Authorization: Bearer <token> (kbdesk token create makes one)", headers=CHALLENGE
        )
    if scheme.lower() != "bearer" or not secret:
        raise ApiError(401, "the Authorization header must be: Bearer <token>", headers=CHALLENGE)
    who = await anyio.to_thread.run_sync(_caller, request.app.state.kbdesk, secret)
    try:
        yield who
    finally:
        who.lease.release()


def _caller(state: Any, secret: str) -> Caller:
    token = state.tokens.verify(secret)
    if token is None:
        raise ApiError(401, "the token is not valid (unknown or revoked)", headers=CHALLENGE)
    try:
        return Caller(token, state.desks.lease(token))
    except TokenUserGone as exc:
        raise ApiError(401, str(exc), headers=CHALLENGE) from None


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value) == 36
