"""How a store is composed: repositories over one base, and the store's surface made of theirs.

A repository (notes, personas, conversations, settings, the embedding cache…) is a
class of its own, given a :class:`Base` — the store's connections and transactions, its
engine object (:class:`kbdesk.store.engine.Engine`: the dialect), its access policy and
the user it acts as — and, where the two engines store a thing differently, an engine
object of that repository's own (the SQLite or Postgres answer to one narrow protocol).
No repository inherits another's hooks.

The store (:class:`kbdesk.store.sqlite.SqliteStore`, :class:`kbdesk.store.postgres.PostgresStore`)
builds its repositories and offers their methods as its own with :func:`via`, so callers
keep writing ``store.create_note(...)``; each offered method keeps the repository
method's exact signature, so :mod:`kbdesk.store.contract` still has mypy prove the store
satisfies :class:`kbdesk.store.api.Store` and the protocols beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from kbdesk.store.dbapi import Connection

if TYPE_CHECKING:
    from kbdesk.store.api import Policy
    from kbdesk.store.engine import Engine

__all__ = ["Base", "Via", "via"]

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")


class Base(Protocol):
    """What every repository is given: the store's connections and transactions, its
    engine object, its access policy and the user it acts as (read when used: a team
    server's store learns who it is after connecting)."""

    @property
    def db(self) -> Engine: ...
    @property
    def policy(self) -> Policy: ...
    @property
    def local_user_id(self) -> str: ...
    def connection(self) -> Connection: ...
    def write(self) -> AbstractContextManager[Connection]: ...
    def read(self) -> AbstractContextManager[Connection]: ...


class Via(Generic[R, P, T]):
    """A store's method that is a repository's: ``store.name(...)`` calls
    ``store.<part>.name(...)`` (see :func:`via`)."""

    def __init__(self, part: str, method: Callable[Concatenate[R, P], T]) -> None:
        self.part = part
        self.method = method
        self.name = method.__name__
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:  # the store's method is the repository's, under its name
            raise TypeError(f"{owner.__name__}.{name} is via() of {self.method.__qualname__}: the names must match")

    @overload
    def __get__(self, obj: None, owner: type) -> Via[R, P, T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, T]: ...
    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        return getattr(getattr(obj, self.part), self.name)


def via(part: str, method: Callable[Concatenate[R, P], T]) -> Via[R, P, T]:
    """The store's method ``method.__name__``, answered by its repository ``part``
    (an attribute of the store): ``create_note = via("notes", Notes.create_note)``."""
    return Via(part, method)
