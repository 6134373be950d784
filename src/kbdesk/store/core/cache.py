"""The embedding cache, model swaps and the usage log, for both engines.

Stored vectors double as the cache: a chunk text embedded once with a model (in any
KB) is never embedded again with it. The cache table stages vectors that have no chunk
yet (a re-embed in progress, or a run that was stopped: see ``ingest/batch.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from kbdesk.errors import InvalidInputError
from kbdesk.models import KnowledgeBase
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import KbRecords
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.unit_vectors import normalise


class CacheVectors(Protocol):
    """An engine's answers for the embedding cache: where chunks keep their vectors."""

    @property
    def key(self) -> str:
        """The cache table's unique key (``ON CONFLICT`` target)."""
        ...

    def chunk_vectors(self, conn: Connection, model_id: str, hashes: list[str]) -> dict[str, bytes]:
        """Vectors of chunks embedded with ``model_id`` whose text hash is among ``hashes``."""
        ...

    def swap_vectors(self, conn: Connection, kb_id: str, model_key: str, dims: int | None) -> None:
        """Give the KB's chunks their vectors from the cache under ``model_key``."""
        ...


class EmbeddingCache:
    """The embedding cache, model swaps and the usage log, over the store's ``base``,
    its KB records (``kbs``) and the engine's :class:`CacheVectors`."""

    def __init__(self, base: Base, kbs: KbRecords, engine: CacheVectors) -> None:
        self.base = base
        self.kbs = kbs
        self.engine = engine

    @property
    def db(self) -> Engine:
        return self.base.db

    def cached_vectors(self, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]:
        """Known vectors of ``model_id`` for these text hashes: from any KB's chunks
        embedded with that model, then from the staging cache."""
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, bytes] = {}
        conn = self.base.connection()
        step = self.db.list_chunk
        for start in range(0, len(hashes), step):
            part = hashes[start : start + step]
            out.update(self.engine.chunk_vectors(conn, model_id, part))
            rest = [h for h in part if h not in out]
            if rest:
                where, args = self.db.in_list("text_hash", rest)
                rows = conn.execute(
                    self.db.sql(
                        f"SELECT text_hash, embedding FROM {self.db.table('embedding_cache')} "
                        f"WHERE model = ? AND {where}"
                    ),
                    (model_id, *args),
                ).fetchall()
                out.update({h: bytes(b) for h, b in rows})
        return out

    def put_cached_vectors(self, model_key: str, items: Sequence[tuple[str, Any]]) -> None:
        """Store (text_hash, vector) pairs in the embedding cache, unit-normalised."""
        rows = []
        now = self.db.now()
        for h, vector in items:
            blob = vector if isinstance(vector, bytes) else normalise(vector, what="vector").tobytes()
            rows.append((model_key, h, len(blob) // 4, blob, now))
        with self.base.write() as conn:
            self.db.executemany(
                conn,
                f"INSERT INTO {self.db.table('embedding_cache')}(model, text_hash, dimensions, "
                f"embedding, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT {self.engine.key} DO UPDATE "
                "SET dimensions = excluded.dimensions, embedding = excluded.embedding, "
                "created_at = excluded.created_at",
                rows,
            )

    def drop_cached_vectors(self, model_key: str, hashes: Iterable[str]) -> None:
        """Forget cached vectors of ``model_key`` for these text hashes."""
        todo = list(hashes)
        step = self.db.list_chunk
        with self.base.write() as conn:
            for start in range(0, len(todo), step):
                where, args = self.db.in_list("text_hash", todo[start : start + step])
                self.db.delete(conn, self.db.table("embedding_cache"), f"model = ? AND {where}", (model_key, *args))

    def prune_cached_vectors(self, prefix: str, days: int) -> int:
        """Forget cached vectors under keys starting with ``prefix`` older than ``days``."""
        cutoff = self.db.at(datetime.now(UTC) - timedelta(days=int(days)))
        with self.base.write() as conn:
            return self.db.delete(
                conn,
                self.db.table("embedding_cache"),
                "substr(model, 1, ?) = ? AND created_at < ?",
                (len(prefix), prefix, cutoff),
            )

    def chunk_texts(self, kb_id: str) -> list[tuple[str, str]]:
        """Distinct (text_hash, content) of a KB's chunks."""
        rows = (
            self.base.connection()
            .execute(
                self.db.sql("SELECT content_hash, min(content) FROM kb_chunks WHERE kb_id = ? GROUP BY content_hash"),
                (kb_id,),
            )
            .fetchall()
        )
        return [(h, c) for h, c in rows]

    def swap_embedding_model(self, kb_id: str, provider: str, model_id: str, model_key: str) -> KnowledgeBase:
        """Give every chunk of a KB its vector from ``model_key``'s cache, in one transaction.

        The KB never mixes models: either all its chunks move to the new model (and
        its embedding_config says so) or nothing changes.
        """
        sql, cache = self.db.sql, self.db.table("embedding_cache")
        with self.base.write() as conn:
            kb = self.kbs.kb_row(conn, kb_id)
            self.base.policy.check_manage(kb)
            missing = conn.execute(
                sql(
                    f"SELECT count(*) FROM kb_chunks c WHERE c.kb_id = ? AND NOT EXISTS (SELECT 1 FROM {cache} e "
                    "WHERE e.model = ? AND e.text_hash = c.content_hash)"
                ),
                (kb_id, model_key),
            ).fetchone()[0]
            if missing:
                raise InvalidInputError(f"{missing} chunks of '{kb.name}' have no vector from {model_id} yet")
            dims = conn.execute(
                sql(
                    f"SELECT min(e.dimensions), max(e.dimensions) FROM {cache} e WHERE e.model = ? "
                    "AND e.text_hash IN (SELECT content_hash FROM kb_chunks WHERE kb_id = ?)"
                ),
                (model_key, kb_id),
            ).fetchone()
            if dims[0] != dims[1]:
                raise InvalidInputError(f"{model_id} returned vectors of different sizes ({dims[0]} and {dims[1]})")
            self.kbs.vectors.drop(conn, kb_id)
            self.engine.swap_vectors(conn, kb_id, model_key, dims[0])
            config = dict(kb.embedding_config, provider=provider, model_id=model_id)
            if dims[0] is not None:
                config["dimensions"] = dims[0]
            conn.execute(
                sql("UPDATE knowledge_bases SET embedding_config = ?, updated_at = ? WHERE id = ?"),
                (self.db.json_in(config), self.db.now(), kb_id),
            )
            self.db.delete(conn, cache, "model = ?", (model_key,))  # now in kb_chunks
            self.kbs.audit(
                conn,
                "kb.reembed",
                kb_id,
                kb.name,
                {
                    "from": {"provider": kb.embedding_config.get("provider"), "model_id": kb.model_id},
                    "to": {"provider": provider, "model_id": model_id, "dimensions": dims[0]},
                },
            )
            return self.kbs.kb_row(conn, kb_id)

    def log_usage(
        self,
        role: str,
        *,
        provider: str = "",
        model: str = "",
        kb_id: str | None = None,
        inputs: int = 0,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        total_tokens: int | None = None,
    ) -> None:
        with self.base.write() as conn:
            conn.execute(
                self.db.sql(
                    f"INSERT INTO {self.db.table('usage_log')}(created_at, user_id, role, provider, "
                    "model, kb_id, prompt_tokens, completion_tokens, total_tokens, inputs) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    self.db.now(),
                    self.base.local_user_id,
                    role,
                    provider,
                    model,
                    kb_id,
                    prompt_tokens,
                    completion_tokens,
                    total_tokens,
                    inputs,
                ),
            )
