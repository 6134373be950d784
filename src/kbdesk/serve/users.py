"""Who a token acts as, and the desk each request of that user works through.

**SQLite.** A SQLite file is one person's desk: every token acts as its one user (the
file's local user). ``--user`` names whom the token was given to, so tokens can be
told apart and revoked one by one; what a token may do is its permissions.

**Postgres.** The server connects as the owner of kbdesk's tables (the
administrator's login), because only the owner reads the token table and may act for
others. A token names a kbdesk user of that database — a login made one with
``kbdesk pg grant`` — or the owner's own ``[identity]``. Each request runs through a
desk acting as that user's identity (:meth:`~kbdesk.desk.Desk.current_identity`),
read from the database at every request (user id, system admin, teams), so the store's
scope rules (the same rules row-level security
enforces for logins) decide what the request sees and changes. Changes to a user's
teams or admin rights apply to their next request; revoking the login with ``pg
revoke`` ends their tokens.

Why not ``SET ROLE``: the database's identity helpers read ``session_user``, which
``SET ROLE`` leaves as the server's own login, so row security would see the server,
not the user; ``SET SESSION AUTHORIZATION`` would, but needs a superuser connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbdesk.desk_admin import TokenUser, TokenUserGone
from kbdesk.store.api import TEAM, TeamIdentity
from kbdesk.store.tokens import ApiToken

if TYPE_CHECKING:
    from kbdesk.desk import Desk

__all__ = ["Desks", "Lease", "TokenUser", "TokenUserGone", "token_user"]


def token_user(desk: Desk, name: str) -> TokenUser:
    """The user a new token for ``name`` acts as (:meth:`kbdesk.desk.Desk.token_user`)."""
    return desk.token_user(name)


MAX_OPEN_DESKS = 8  # users' desks kept open at once on a team server (idle ones beyond are closed)
REQUEST_THREADS = 8  # requests run at once on a team server: each thread keeps a connection per user's store


class Lease:
    """A desk in use by one request or one piece of background work; ``release()`` when done."""

    def __init__(
        self, desks: Desks | None, key: tuple[Any, ...] | None, desk: Desk, identity: TeamIdentity | None
    ) -> None:
        self._desks, self._key = desks, key
        self.desk, self.identity = desk, identity
        self._released = False
        self.started = False  # handed to background work, which releases it

    def share(self) -> Lease:
        """Another lease on the same desk (for work that outlives the request)."""
        if self._desks is None or self._key is None:
            return Lease(None, None, self.desk, self.identity)
        return self._desks._take(self._key, self.identity)

    def release(self) -> None:
        if not self._released and self._desks is not None and self._key is not None:
            self._released = True
            self._desks._give_back(self._key)


@dataclass
class _Open:
    desk: Desk
    users: int = 0
    last: float = 0.0


class Desks:
    """The desk for each request: the server's own on SQLite, one per user on Postgres.

    On Postgres each user's desk holds its own connections (one per thread that used
    it), so at most :data:`MAX_OPEN_DESKS` stay open: when another user comes, the
    least recently used desks nobody is using are closed (and opened again on their
    next request)."""

    def __init__(self, base: Desk, *, on_new: Callable[[Lease], None] | None = None) -> None:
        self.base = base
        self.on_new = on_new or (lambda lease: lease.release())
        self._lock = threading.Lock()
        self._desks: dict[tuple[Any, ...], _Open] = {}

    @property
    def multi_user(self) -> bool:
        return TEAM in self.base.capabilities

    def lease(self, token: ApiToken) -> Lease:
        """The desk (and, on a team server, the identity) a request of ``token`` works with."""
        if not self.multi_user:
            return Lease(None, None, self.base, None)
        who = self.identity(token)
        if who is self.base.identity:  # the owner's own identity: the server's desk
            return Lease(None, None, self.base, who)
        key = (who.user_id, who.username, who.admin, tuple(sorted(who.teams.items())))
        fresh = False
        with self._lock:
            if key not in self._desks:
                self._desks[key] = _Open(self._open(who))
                fresh = True
        lease = self._take(key, who)
        if fresh:
            self.on_new(self._take(key, who))
            self._evict()
        return lease

    def _take(self, key: tuple[Any, ...], who: TeamIdentity | None) -> Lease:
        with self._lock:
            entry = self._desks[key]
            entry.users += 1
            entry.last = time.monotonic()
            return Lease(self, key, entry.desk, who)

    def _give_back(self, key: tuple[Any, ...]) -> None:
        with self._lock:
            self._desks[key].users -= 1

    def _evict(self) -> None:
        with self._lock:
            idle = sorted((e.last, k) for k, e in self._desks.items() if e.users == 0)
            gone = [self._desks.pop(k).desk for _, k in idle[: max(0, len(self._desks) - MAX_OPEN_DESKS)]]
        for desk in gone:
            desk.close()

    def identity(self, token: ApiToken) -> TeamIdentity:
        """The token user's identity now (a revoked login is refused: :class:`TokenUserGone`)."""
        return self.base.current_identity(token.user_id, token.username)

    def _open(self, who: TeamIdentity) -> Desk:
        return self.base.as_user(who)

    def open_count(self) -> int:
        with self._lock:
            return len(self._desks)

    def close(self) -> None:
        with self._lock:
            desks, self._desks = [e.desk for e in self._desks.values()], {}
        for desk in desks:
            desk.close()
