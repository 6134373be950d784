"""A desk's remotes: a client per ``[remotes.NAME]`` table, each remote's KB list (kept
a minute), its circuit breaker, and calls bounded by a budget (:func:`run_within`)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kbdesk.config import Config
from kbdesk.errors import NotFoundError
from kbdesk.models import KnowledgeBase
from kbdesk.providers.breaker import Breaker, BreakerOpen, breaker_for
from kbdesk.remote.client import RemoteAuthError, RemoteClient, RemoteConfigError, RemoteRequestError
from kbdesk.remote.names import EVERY, display_name
from kbdesk.remote.settings import RemoteSettings

LIST_TTL = 60.0
"""Seconds a remote's KB list is reused before it is asked again."""


MAX_WIRE_ID = 200
"""Characters of a remote's KB id at most (its ids are UUIDs)."""


class MalformedEntry(ValueError):
    """One entry of a remote's answer (a KB, a result) that is not what kbdesk serve sends."""


def _text(entry: dict[str, Any], key: str, default: str) -> str:
    value = entry.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise MalformedEntry(f"a {key} that is not text ({type(value).__name__})")
    return value


def _count(entry: dict[str, Any], key: str) -> int:
    value = entry.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedEntry(f"a {key} that is not a count ({_shown(value)})")
    return value


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, (str, int, float)) else type(value).__name__
    return text if len(text) <= 40 else text[:39] + "…"


@dataclass(frozen=True)
class RemoteKb:
    """A KB of a remote, as its server describes it."""

    remote: str
    id: str
    name: str
    description: str = ""
    model_id: str | None = None
    dimensions: int | None = None
    document_count: int = 0
    chunk_count: int = 0
    status: str = "active"

    @property
    def display(self) -> str:
        return display_name(self.remote, self.name)

    @classmethod
    def from_wire(cls, remote: str, kb: Any) -> RemoteKb:
        """A KB of the remote's list, read as data from a stranger: a field of the wrong type
        is :class:`MalformedEntry` naming it (the KB is left out, never the search)."""
        if not isinstance(kb, dict):
            raise MalformedEntry("a knowledge base that is not an object")
        kb_id = kb.get("id")
        if not isinstance(kb_id, str) or not kb_id.strip() or len(kb_id) > MAX_WIRE_ID:
            raise MalformedEntry("a knowledge base without a usable id")
        raw = kb.get("embedding_config")
        config: dict[str, Any] = raw if isinstance(raw, dict) else {}
        dims = config.get("dimensions")
        model = config.get("model_id")
        return cls(
            remote,
            kb_id,
            _text(kb, "name", kb_id),
            _text(kb, "description", ""),
            model if isinstance(model, str) and model else None,
            dims if isinstance(dims, int) and not isinstance(dims, bool) and 0 < dims <= 100_000 else None,
            _count(kb, "document_count"),
            _count(kb, "chunk_count"),
            _text(kb, "status", "active"),
        )

    @property
    def ref(self) -> str:
        """The ref that names exactly this KB: ``team:<its id>``."""
        return f"{self.remote}:{self.id}"

    def as_kb(self) -> KnowledgeBase:
        """A :class:`KnowledgeBase` the chat and MCP can carry: its id is :attr:`ref` (so a
        search of it goes to the remote), its name ``team:Product Docs``, its scope ``remote``."""
        return remote_kb(self.ref, self.display, self.model_id, self.document_count, self.chunk_count, self.description)

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "id": self.id,
            "name": self.display,
            "kb_name": self.name,
            "description": self.description,
            "model_id": self.model_id,
            "dimensions": self.dimensions,
            "document_count": self.document_count,
            "chunk_count": self.chunk_count,
            "status": self.status,
        }


@dataclass
class RemoteState:
    """What became of one remote in a search or a listing."""

    remote: str
    state: str  # "searched", "unreachable", "refused", "slow", "failed"
    reason: str | None = None
    kbs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"remote": self.remote, "state": self.state, "reason": self.reason, "kbs": list(self.kbs)}

    @property
    def note(self) -> str:
        return f"remote '{self.remote}' was not searched ({self.reason}): results from the other sources only"


def state_of(error: BaseException) -> str:
    if isinstance(error, (RemoteAuthError, RemoteConfigError)):
        return "refused"
    if isinstance(error, BreakerOpen):
        return "unreachable"
    if isinstance(error, RemoteRequestError | NotFoundError):
        return "failed"
    return "unreachable"


def reason_of(error: BaseException, remote: str) -> str:
    text = " ".join(str(error).split())
    for prefix in (f"remote '{remote}' ", f"provider '{remote}' "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if text.startswith("(") and ") " in text:  # "(its URL) is unreachable: …": the URL is in remote list
        text = text.split(") ", 1)[1]
    return text


class Remotes:
    """The remotes of one desk's config (thread-safe)."""

    def __init__(self, settings: dict[str, RemoteSettings]) -> None:
        self.settings = dict(settings)
        self._lock = threading.Lock()
        self._clients: dict[str, RemoteClient] = {}
        self._lists: dict[str, tuple[float, list[RemoteKb]]] = {}
        self._dropped: dict[str, list[str]] = {}

    @property
    def names(self) -> list[str]:
        return sorted(self.settings)

    def client(self, name: str) -> RemoteClient:
        if name not in self.settings:
            raise NotFoundError(f"no remote '{name}' (kbdesk remote list shows them)")
        with self._lock:
            found = self._clients.get(name)
            if found is None:
                found = self._clients[name] = RemoteClient(name, self.settings[name])
            return found

    def breaker(self, name: str) -> Breaker:
        return breaker_for(f"remote:{self.settings[name].url}", name)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def _guarded(self, name: str, call: Callable[[], Any]) -> Any:
        """``call()`` through the remote's breaker; a refusal of the request itself does not trip it."""
        breaker = self.breaker(name)
        try:
            breaker.check()
        except BreakerOpen as exc:
            raise BreakerOpen(str(exc).replace("provider '", "remote '", 1), provider=name) from None
        try:
            value = call()
        except RemoteRequestError:
            breaker.succeeded()  # it answered
            raise
        except BaseException as exc:
            breaker.failed(exc)
            raise
        breaker.succeeded()
        return value

    def kbs(self, name: str, *, fresh: bool = False, deadline: float | None = None) -> list[RemoteKb]:
        """The KBs the remote's token may read (kept :data:`LIST_TTL` seconds). A KB its
        answer describes wrongly is left out, and :meth:`dropped` says why."""
        with self._lock:
            kept = self._lists.get(name)
        if kept is not None and not fresh and time.monotonic() - kept[0] < LIST_TTL:
            return kept[1]
        client = self.client(name)
        listed: list[RemoteKb] = []
        left_out: list[str] = []
        for entry in self._guarded(name, lambda: client.list_kbs(deadline=deadline)):
            try:
                listed.append(RemoteKb.from_wire(name, entry))
            except MalformedEntry as exc:
                left_out.append(str(exc))
        with self._lock:
            self._lists[name] = (time.monotonic(), listed)
            self._dropped[name] = left_out
        return listed

    def dropped(self, name: str) -> str | None:
        """One line on the KBs of the remote's last list that were left out, if any."""
        with self._lock:
            left_out = self._dropped.get(name) or []
        if not left_out:
            return None
        many = f"{len(left_out)} knowledge bases" if len(left_out) > 1 else "a knowledge base"
        return f"remote '{name}': {many} left out: its list gave {left_out[0]}"

    def resolve(self, name: str, refs: Sequence[str], *, deadline: float | None = None) -> list[RemoteKb]:
        """The remote's KBs named by ``refs`` (names, ids, id prefixes of 4+ characters, or ``*``)."""
        kbs = self.kbs(name, deadline=deadline)
        chosen: dict[str, RemoteKb] = {}
        for ref in refs:
            if ref == EVERY:
                chosen.update({kb.id: kb for kb in kbs})
                continue
            found = _find(kbs, ref)
            if found is None:
                raise NotFoundError(f"remote '{name}' has no knowledge base '{ref}' this token may read")
            chosen.setdefault(found.id, found)
        return list(chosen.values())

    def list_all(self, budget: float | None = None) -> tuple[list[RemoteKb], list[RemoteState]]:
        """Every remote's KBs, asked at once; a remote that fails or is slow is named in the states."""
        within = budget if budget is not None else self.budget()
        deadline = time.monotonic() + within
        calls = {name: functools.partial(self.kbs, name, deadline=deadline) for name in self.names}
        answers = run_within(calls, within)
        kbs: list[RemoteKb] = []
        states: list[RemoteState] = []
        for name in self.names:
            outcome = answers[name]
            if isinstance(outcome, BaseException):
                states.append(RemoteState(name, state_of(outcome), reason_of(outcome, name)))
            elif outcome is SLOW:
                states.append(RemoteState(name, "slow", f"no answer within {self.budget(name):g} s"))
            else:
                kbs.extend(outcome)
                states.append(RemoteState(name, "searched", None, [kb.display for kb in outcome]))
        return kbs, states

    def budget(self, name: str | None = None) -> float:
        if name is not None:
            return self.settings[name].budget
        return max((s.budget for s in self.settings.values()), default=0.0)


def _find(kbs: Sequence[RemoteKb], ref: str) -> RemoteKb | None:
    lowered = ref.strip().lower()
    for test in (
        lambda kb: kb.id.lower() == lowered,
        lambda kb: kb.name == ref.strip(),
        lambda kb: kb.name.lower() == lowered,
    ):
        hits = [kb for kb in kbs if test(kb)]
        if len(hits) == 1:
            return hits[0]
    prefix = [kb for kb in kbs if len(lowered) >= 4 and kb.id.lower().startswith(lowered)]
    return prefix[0] if len(prefix) == 1 else None


SLOW = object()
GRACE = 0.5
"""Seconds :func:`run_within` waits past the budget: the calls end themselves at their
deadline (the budget), so a slow remote's error is named rather than just "slow"."""


def run_within(calls: Mapping[str, Callable[[], Any]], budget: float) -> dict[str, Any]:
    """Each call in a daemon thread of its own; what each returned or raised, or ``SLOW``
    for a call still running when ``budget`` (+ :data:`GRACE`) seconds are spent. The
    calls are given the same budget as their deadline (:class:`~kbdesk.remote.client.RemoteClient`
    cancels a request when its time is up), so none outlives it by more than a moment."""
    answers: dict[str, Any] = dict.fromkeys(calls, SLOW)
    lock = threading.Lock()

    def run(name: str, call: Callable[[], Any]) -> None:
        try:
            value: Any = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which words it
            value = exc
        with lock:
            answers[name] = value

    threads = [threading.Thread(target=run, args=item, daemon=True, name=f"remote-{item[0]}") for item in calls.items()]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + budget + GRACE
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return dict(answers)


def remote_kb(
    ref: str, name: str, model_id: str | None = None, documents: int = 0, chunks: int = 0, description: str = ""
) -> KnowledgeBase:
    """A remote KB as a :class:`KnowledgeBase` (id: its ref; scope: ``remote``)."""
    return KnowledgeBase(
        id=ref,
        name=name,
        description=description,
        scope="remote",
        owner_id=None,
        team_id=None,
        embedding_config={"model_id": model_id} if model_id else {},
        document_count=documents,
        chunk_count=chunks,
        total_bytes=0,
        status="active",
        discoverable=True,
        created_at="",
        updated_at="",
    )


class PickerSource(Protocol):
    """What :func:`pickable_kbs` reads of the desk (:class:`kbdesk.desk_api.DeskApi` imports
    this module, so it names the part it needs here)."""

    config: Config

    @property
    def remotes(self) -> Remotes: ...

    def list_kbs(self) -> list[KnowledgeBase]: ...


def pickable_kbs(desk: PickerSource) -> tuple[list[KnowledgeBase], list[RemoteState]]:
    """What a KB picker offers: the local KBs, then each remote's (``team:Product Docs``,
    scope ``remote``), and each remote's state (a remote that does not answer within its
    budget offers none, and its state says why)."""
    local = desk.list_kbs()
    if not desk.config.remotes:
        return local, []
    listed, states = desk.remotes.list_all()
    return local + [kb.as_kb() for kb in listed], states
