"""API tokens for ``kbdesk serve``: made once, shown once, kept only as a hash.

A token is ``kbd_`` and 43 random URL-safe characters (256 bits from :mod:`secrets`).
The store keeps its SHA-256 — a token that random needs no slow hash: nothing short
of the token itself matches it — with the first characters (``prefix``) so a person
can tell their tokens apart in ``kbdesk token list``, the user it acts as and its
permissions. The same SQL serves both engines (table ``api_tokens`` in the SQLite
file, ``kbdesk_api_tokens`` on Postgres, where only the tables' owner reads it).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.store.api import Store

TOKEN_PREFIX = "kbd_"
SHOWN_CHARS = 12  # of a token kept in clear to name it: "kbd_" and 8 random characters
PERMISSIONS = ("kb.create", "kb.write")
TOUCH_EVERY = 60.0  # seconds between two writes of a token's last use
MAX_LABEL = 200

_COLUMNS = "id, prefix, user_id, username, permissions, label, created_at, last_used_at, revoked_at"


def tokens_ddl(table: str) -> str:
    """The token table, the same on both engines (the schema steps ``api_tokens``)."""
    return f"""CREATE TABLE IF NOT EXISTS {table} (
        id           TEXT PRIMARY KEY,
        token_hash   TEXT NOT NULL UNIQUE,
        prefix       TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        username     TEXT NOT NULL,
        permissions  TEXT NOT NULL DEFAULT '',
        label        TEXT NOT NULL DEFAULT '',
        created_at   TEXT NOT NULL,
        last_used_at TEXT,
        revoked_at   TEXT
    )"""


@dataclass(frozen=True)
class ApiToken:
    """What is known of a token (never the token itself)."""

    id: str
    prefix: str
    user_id: str
    username: str
    permissions: frozenset[str]
    label: str
    created_at: str
    last_used_at: str | None
    revoked_at: str | None

    def allows(self, permission: str) -> bool:
        return permission in self.permissions

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prefix": self.prefix,
            "user_id": self.user_id,
            "user": self.username,
            "permissions": sorted(self.permissions),
            "label": self.label,
            "created_at": self.created_at,
            "last_used_at": self.last_used_at,
            "revoked_at": self.revoked_at,
        }


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def check_permissions(names: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(n.strip() for n in names if n.strip())
    unknown = sorted(chosen - set(PERMISSIONS))
    if unknown:
        raise InvalidInputError(f"unknown permission {unknown[0]!r}: the permissions are {', '.join(PERMISSIONS)}")
    return chosen


class Tokens:
    """The API tokens of one store (SQLite or Postgres)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = "kbdesk_api_tokens" if store.kind == "postgres" else "api_tokens"
        self._touched: dict[str, float] = {}
        self._lock = threading.Lock()

    def _sql(self, text: str) -> str:
        text = text.replace("{table}", self.table)
        return text.replace("?", "%s") if self.store.kind == "postgres" else text

    # ── making, listing, revoking ──────────────────────────────────────────────
    def create(
        self, user_id: str, username: str, permissions: Iterable[str] = PERMISSIONS, label: str = ""
    ) -> tuple[ApiToken, str]:
        """A new token for ``username``: (what is stored, the token to hand over once)."""
        chosen = check_permissions(permissions)
        label = " ".join("".join(ch if ch.isprintable() else " " for ch in label or "").split())[:MAX_LABEL]
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = ApiToken(
            str(uuid.uuid4()), secret[:SHOWN_CHARS], str(user_id), username, chosen, label, _now(), None, None
        )
        with self.store.write() as conn:
            conn.execute(
                self._sql(
                    "INSERT INTO {table}(id, token_hash, prefix, user_id, username, permissions, "
                    "label, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    token.id,
                    hash_token(secret),
                    token.prefix,
                    token.user_id,
                    username,
                    ",".join(sorted(chosen)),
                    label,
                    token.created_at,
                ),
            )
            self.store.audit(
                conn, "token.create", None, username, {"token_id": token.id, "permissions": sorted(chosen)}
            )
        return token, secret

    def list(self, *, include_revoked: bool = False) -> list[ApiToken]:
        where = "" if include_revoked else " WHERE revoked_at IS NULL"
        with self.store.read() as conn:
            rows = conn.execute(
                self._sql(f"SELECT {_COLUMNS} FROM {{table}}{where} ORDER BY created_at, id")
            ).fetchall()
        return [_token(r) for r in rows]

    def find(self, ref: str) -> ApiToken:
        """A token by id, id prefix or its shown prefix (``kbd_…``)."""
        ref = (ref or "").strip()
        if len(ref) < 4:
            raise InvalidInputError("name a token by its id or the first characters kbdesk token list shows")
        matches = [
            t
            for t in self.list(include_revoked=True)
            if t.id == ref
            or (len(ref) >= 6 and t.id.startswith(ref))
            or t.prefix == ref
            or (ref.startswith(TOKEN_PREFIX) and ref.startswith(t.prefix))
        ]
        active = [t for t in matches if t.active] or matches
        if not active:
            raise NotFoundError(f"no token {ref!r}")
        if len(active) > 1:
            raise InvalidInputError(f"{ref!r} names {len(active)} tokens: give more of the id")
        return active[0]

    def revoke(self, ref: str) -> ApiToken:
        """Revoke a token (it stops working at once); revoking it again changes nothing."""
        token = self.find(ref)
        if not token.active:
            return token
        now = _now()
        with self.store.write() as conn:
            conn.execute(
                self._sql("UPDATE {table} SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"), (now, token.id)
            )
            self.store.audit(conn, "token.revoke", None, token.username, {"token_id": token.id})
        return self.find(token.id)

    # ── checking ───────────────────────────────────────────────────────────────
    def verify(self, secret: str) -> ApiToken | None:
        """The active token ``secret`` is, or None (unknown, malformed or revoked)."""
        if not secret.startswith(TOKEN_PREFIX) or not 16 <= len(secret) <= 200:
            return None
        with self.store.read() as conn:
            row = conn.execute(
                self._sql(f"SELECT {_COLUMNS} FROM {{table}} WHERE token_hash = ?"), (hash_token(secret),)
            ).fetchone()
        if row is None:
            return None
        token = _token(row)
        if not token.active:
            return None
        self._touch(token.id)
        return token

    def _touch(self, token_id: str) -> None:
        """Record a token's last use, at most once a minute per token (a write per
        request would queue every request behind the database's one writer)."""
        now = time.monotonic()
        with self._lock:
            if now - self._touched.get(token_id, -TOUCH_EVERY) < TOUCH_EVERY:
                return
            self._touched[token_id] = now
        with self.store.write() as conn:
            conn.execute(self._sql("UPDATE {table} SET last_used_at = ? WHERE id = ?"), (_now(), token_id))


def _token(row: Any) -> ApiToken:
    token_id, prefix, user_id, username, permissions, label, created, used, revoked = row
    return ApiToken(
        str(token_id),
        prefix,
        str(user_id),
        username,
        frozenset(p for p in (permissions or "").split(",") if p),
        label or "",
        created,
        used,
        revoked,
    )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
