"""The embedding cache and model swaps in the SQLite store.

Stored vectors double as the cache: a chunk text embedded once with a model (in any
KB) is never embedded again with it. ``embedding_cache`` stages vectors that have no
chunk yet (a re-embed in progress). Mixed into the store through
:class:`kbdesk.store.documents.DocumentsMixin`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from kbdesk.errors import InvalidInputError
from kbdesk.models import KnowledgeBase
from kbdesk.store.vectors import normalise


class CacheMixin:
    """Needs ``write()``, ``connection()``, ``audit()``, ``vectors``, ``_get_kb`` and
    ``local_user_id`` from the store."""

    def cached_vectors(self, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]:
        """Known vectors of ``model_id`` for these text hashes: from any KB's chunks
        embedded with that model, then from the staging cache."""
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, bytes] = {}
        conn = self.connection()
        for start in range(0, len(hashes), 500):
            part = hashes[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = conn.execute(
                f"SELECT c.content_hash, c.embedding FROM kb_chunks c JOIN knowledge_bases k ON k.id = c.kb_id "
                f"WHERE c.content_hash IN ({marks}) AND c.embedding IS NOT NULL "
                f"AND json_extract(k.embedding_config, '$.model_id') = ?", (*part, model_id)).fetchall()
            out.update({h: b for h, b in rows})
            rest = [h for h in part if h not in out]
            if rest:
                rows = conn.execute(f"SELECT text_hash, embedding FROM embedding_cache WHERE model = ? AND text_hash IN "
                                    f"({','.join('?' * len(rest))})", (model_id, *rest)).fetchall()
                out.update({h: b for h, b in rows})
        return out

    def put_cached_vectors(self, model_key: str, items: Sequence[tuple[str, Any]]) -> None:
        """Store (text_hash, vector) pairs in the embedding cache, unit-normalised."""
        rows = []
        for h, vector in items:
            blob = vector if isinstance(vector, bytes) else normalise(vector, what="vector").tobytes()
            rows.append((model_key, h, len(blob) // 4, blob))
        with self.write() as conn:
            conn.executemany("INSERT OR REPLACE INTO embedding_cache(model, text_hash, dimensions, embedding) "
                             "VALUES (?, ?, ?, ?)", rows)

    def drop_cached_vectors(self, model_key: str, hashes: Iterable[str]) -> None:
        """Forget cached vectors of ``model_key`` for these text hashes."""
        todo = list(hashes)
        if not todo:
            return
        with self.write() as conn:
            for start in range(0, len(todo), 500):
                part = todo[start:start + 500]
                conn.execute(f"DELETE FROM embedding_cache WHERE model = ? AND text_hash IN "
                             f"({','.join('?' * len(part))})", (model_key, *part))

    def prune_cached_vectors(self, prefix: str, days: int) -> int:
        """Forget cached vectors under keys starting with ``prefix`` older than ``days``."""
        with self.write() as conn:
            return conn.execute("DELETE FROM embedding_cache WHERE substr(model, 1, ?) = ? AND created_at < "
                                "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?)",
                                (len(prefix), prefix, f"-{int(days)} days")).rowcount

    def chunk_texts(self, kb_id: str) -> list[tuple[str, str]]:
        """Distinct (text_hash, content) of a KB's chunks."""
        rows = self.connection().execute(
            "SELECT content_hash, min(content) FROM kb_chunks WHERE kb_id = ? GROUP BY content_hash",
            (kb_id,)).fetchall()
        return [(h, c) for h, c in rows]

    def swap_embedding_model(self, kb_id: str, provider: str, model_id: str, model_key: str) -> KnowledgeBase:
        """Give every chunk of a KB its vector from ``model_key``'s cache, in one transaction.

        The KB never mixes models: either all its chunks move to the new model (and
        its embedding_config says so) or nothing changes.
        """
        from kbdesk.store.sqlite import utcnow

        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            missing = conn.execute(
                "SELECT count(*) FROM kb_chunks c WHERE c.kb_id = ? AND NOT EXISTS (SELECT 1 FROM embedding_cache e "
                "WHERE e.model = ? AND e.text_hash = c.content_hash)", (kb_id, model_key)).fetchone()[0]
            if missing:
                raise InvalidInputError(f"{missing} chunks of '{kb.name}' have no vector from {model_id} yet")
            dims = conn.execute("SELECT min(e.dimensions), max(e.dimensions) FROM kb_chunks c JOIN embedding_cache e "
                                "ON e.model = ? AND e.text_hash = c.content_hash WHERE c.kb_id = ?",
                                (model_key, kb_id)).fetchone()
            if dims[0] != dims[1]:
                raise InvalidInputError(f"{model_id} returned vectors of different sizes ({dims[0]} and {dims[1]})")
            self.vectors.drop(conn, kb_id)
            conn.execute("UPDATE kb_chunks SET embedding = (SELECT e.embedding FROM embedding_cache e WHERE "
                         "e.model = ? AND e.text_hash = kb_chunks.content_hash) WHERE kb_id = ?", (model_key, kb_id))
            new_dims = dims[0]
            if new_dims is not None:
                conn.execute("INSERT INTO kb_vector_state(kb_id, dimensions) VALUES (?, ?) ON CONFLICT(kb_id) DO "
                             "UPDATE SET dimensions = excluded.dimensions, version = version + 1, "
                             "indexed_version = -1", (kb_id, new_dims))
            config = dict(kb.embedding_config, provider=provider, model_id=model_id)
            if new_dims is not None:
                config["dimensions"] = new_dims
            conn.execute("UPDATE knowledge_bases SET embedding_config = ?, updated_at = ? WHERE id = ?",
                         (json.dumps(config), utcnow(), kb_id))
            conn.execute("DELETE FROM embedding_cache WHERE model = ?", (model_key,))  # now in kb_chunks
            self.audit(conn, "kb.reembed", kb_id, kb.name,
                       {"from": {"provider": kb.embedding_config.get("provider"), "model_id": kb.model_id},
                        "to": {"provider": provider, "model_id": model_id, "dimensions": new_dims}})
            return self._get_kb(conn, kb_id)

    def log_usage(self, role: str, *, provider: str = "", model: str = "", kb_id: str | None = None,
                  inputs: int = 0, prompt_tokens: int | None = None, completion_tokens: int | None = None,
                  total_tokens: int | None = None) -> None:
        from kbdesk.store.sqlite import utcnow

        with self.write() as conn:
            conn.execute("INSERT INTO usage_log(created_at, user_id, role, provider, model, kb_id, prompt_tokens, "
                         "completion_tokens, total_tokens, inputs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (utcnow(), self.local_user_id, role, provider, model, kb_id, prompt_tokens,
                          completion_tokens, total_tokens, inputs))

