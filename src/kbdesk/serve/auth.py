"""Who is calling: ``Authorization: Bearer <token>``, checked on every request.

No token, an unknown or revoked one, or one whose user is gone: 401, and nothing else
is said. A valid token whose permissions do not cover the request: 403 naming the
permission — checked by the route's own dependency (:func:`needs`), before the body is
read, so every write route refuses a token without it whatever it sends (a test walks
the route table). What the user may see and change is the store's business (their
identity on Postgres, the one user of a SQLite file). Every audit row a request writes
names the token that made it (:data:`kbdesk.store.core.audit.ACTING_TOKEN`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from kbdesk.desk_admin import TokenUserGone
from kbdesk.errors import NotFoundError
from kbdesk.models import KnowledgeBase
from kbdesk.serve.errors import ApiError
from kbdesk.serve.users import Lease
from kbdesk.store.core.audit import ACTING_TOKEN
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
            self.desk.policy.check_manage(kb)

    def check_can_create(self, scope: str, team_id: str | None) -> None:
        """The scope rules for a new KB, worded for this user (a kbdesk user of the
        database is told how an administrator grants a right, not to edit a config)."""
        if self.identity is not None:
            self.desk.policy.check_create(scope, team_id)


BEARER = HTTPBearer(
    auto_error=False,  # kbdesk words its own 401s
    scheme_name="bearer",
    description="A token from kbdesk token create: `kbd_` and 43 characters.",
)


async def caller(
    request: Request, _credentials: HTTPAuthorizationCredentials | None = Depends(BEARER)
) -> AsyncIterator[Caller]:
    """The FastAPI dependency of every endpoint but the index and the OpenAPI document:
    the token checked (in a worker thread: it reads the database), the user's desk
    leased for the request and given back after it. (``BEARER`` declares the scheme in
    the OpenAPI document; the header is read here, to word each refusal.)"""
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
    # (each request is a task of its own: what it sets here is its own and goes with it)
    ACTING_TOKEN.set({"id": who.token.id, "prefix": who.token.prefix, "user": who.token.username})
    try:
        yield who
    finally:
        who.lease.release()


def needs(permission: str) -> Any:
    """A route's dependency: the caller, refused (403) unless the token has ``permission``."""

    def check(who: Caller = Depends(caller)) -> Caller:
        who.require(permission)
        return who

    check.permission = permission  # type: ignore[attr-defined]  # read by the route-table test
    return Depends(check)


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


WRITES = needs("kb.write")  # the dependency of routes that change a KB, its documents or a conversation
CREATES = needs("kb.create")  # … and of the route that makes a KB
