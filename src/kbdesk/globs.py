"""Path globs matched in time linear in the path, whatever the pattern.

A glob turned into a regular expression (``[^/]*`` per ``*``) is matched by Python's
``re`` with backtracking: ``*?*?*?…Z`` takes seconds per file name from a dozen stars
on, doubling with each one, and ``re`` holds the interpreter lock meanwhile — a server
answering one such filter answers nobody else and ignores signals. ``fnmatch`` has the
same shape. So a glob here is compiled to a small automaton (one state per pattern
character) that reads the path once, left to right, carrying the *set* of states it can
be in — never going back. Each path character costs at most the pattern's size, and the
sets met are cached as states of a deterministic automaton built on demand (bounded),
so matching many paths against one filter costs a dictionary look-up per character.

Syntax (as docs/SEARCH.md says): ``*`` any run of characters but ``/``; ``?`` one
character but ``/``; ``**`` any run, ``/`` included; ``**/`` any number of whole
folders (none too: ``**/x`` matches ``x``); ``[abc]``, ``[a-z]``, ``[!abc]`` one
character of (or not of) a set, never ``/``; anything else itself.

:func:`check_glob` bounds a pattern (:data:`MAX_GLOB_CHARS` characters,
:data:`MAX_WILDCARDS` wildcards) with one line naming the field; the filter checks every
glob with it when it is made.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import cast

from kbdesk.errors import InvalidInputError

MAX_GLOB_CHARS = 256
"""Characters of one glob at most (a path glob people write is a few dozen)."""
MAX_WILDCARDS = 32
"""Wildcards (``*``/``**`` runs, ``?``, ``[…]`` sets) in one glob at most."""
MAX_GLOBS = 64
"""Globs in one filter field at most."""
_DFA_STATES = 4096  # states of the on-demand automaton kept before it starts over
_FOLDERS = 20_000  # folders whose state is kept

_SetSpec = tuple[bool, frozenset[str], tuple[tuple[str, str], ...]]  # [!…]: negated, characters, ranges
# one transition's test: (kind, argument)
_CHAR, _NOT_SLASH, _ANY, _SET = 0, 1, 2, 3


def check_glob(pattern: str, field: str) -> None:
    """Refuse, in one line naming ``field``, a glob past the bounds."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise InvalidInputError(
            f"filters: '{field}' has a glob of {len(pattern)} characters (at most {MAX_GLOB_CHARS})"
        )
    count = wildcards(pattern)
    if count > MAX_WILDCARDS:
        raise InvalidInputError(f"filters: '{field}' has a glob with {count} wildcards (at most {MAX_WILDCARDS})")


def check_globs(patterns: Sequence[str], field: str) -> None:
    if len(patterns) > MAX_GLOBS:
        raise InvalidInputError(f"filters: '{field}' has {len(patterns)} globs (at most {MAX_GLOBS})")
    for pattern in patterns:
        check_glob(pattern, field)


def wildcards(pattern: str) -> int:
    """How many wildcards ``pattern`` holds (``*``, ``**``, ``**/``, ``?``, ``[…]``)."""
    return sum(1 for token in _tokens(pattern) if token[0] != "lit")


def _tokens(pattern: str) -> list[tuple[str, object]]:
    """``pattern`` as ("lit", c), ("one", None), ("star", None), ("stars", None),
    ("folders", None) for ``**/`` and ("set", (negated, frozenset, ranges))."""
    out: list[tuple[str, object]] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append(("folders", None))
            i += 3
        elif pattern.startswith("**", i):
            out.append(("stars", None))
            i += 2
        elif ch == "*":
            out.append(("star", None))
            i += 1
        elif ch == "?":
            out.append(("one", None))
            i += 1
        elif ch == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            out.append(("set", _char_set(pattern[i + 1 : end])))
            i = end + 1
        else:
            out.append(("lit", ch))
            i += 1
    return out


def _unbounded(pattern: str) -> int:
    """How many wildcards of ``pattern`` match runs of any length."""
    return sum(1 for kind, _ in _tokens(pattern) if kind in ("star", "stars", "folders"))


def _regex(pattern: str) -> str:
    """``pattern`` as a regular expression (for globs with one unbounded wildcard at most)."""
    out = []
    for kind, arg in _tokens(pattern):
        if kind == "lit":
            out.append(re.escape(str(arg)))
        elif kind == "one":
            out.append("[^/]")
        elif kind == "star":
            out.append("[^/]*")
        elif kind == "stars":
            out.append(".*")
        elif kind == "folders":
            out.append("(?:.*/)?")
        else:
            negated, chars, ranges = cast(_SetSpec, arg)
            body = "".join(re.escape(c) for c in sorted(chars))
            body += "".join(f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in ranges if lo <= hi)
            out.append(f"[^/{body}]" if negated else f"(?![/])[{body}]" if body else "(?!)")
    return "".join(out)


def _char_set(body: str) -> tuple[bool, frozenset[str], tuple[tuple[str, str], ...]]:
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            ranges.append((body[i], body[i + 2]))
            i += 3
        else:
            chars.add(body[i])
            i += 1
    return negated, frozenset(chars), tuple(ranges)


class _Nfa:
    """States 0..n; ``moves[s]``: (test kind, argument, next state); ``skips[s]``: states
    reached from ``s`` without reading a character."""

    def __init__(self) -> None:
        self.moves: list[list[tuple[int, object, int]]] = []
        self.skips: list[list[int]] = []
        self.accepting: set[int] = set()

    def state(self) -> int:
        self.moves.append([])
        self.skips.append([])
        return len(self.moves) - 1

    def add(self, pattern: str) -> int:
        start = here = self.state()
        for kind, arg in _tokens(pattern):
            nxt = self.state()
            if kind == "lit":
                self.moves[here].append((_CHAR, arg, nxt))
            elif kind == "one":
                self.moves[here].append((_NOT_SLASH, None, nxt))
            elif kind == "set":
                self.moves[here].append((_SET, arg, nxt))
            elif kind in ("star", "stars"):
                self.moves[here].append((_NOT_SLASH if kind == "star" else _ANY, None, here))
                self.skips[here].append(nxt)
            else:  # folders: (?:.*/)? — skip it, or any run ending in "/"
                inner = self.state()
                self.skips[here].extend((nxt, inner))
                self.moves[inner].append((_ANY, None, inner))
                self.moves[inner].append((_CHAR, "/", nxt))
            here = nxt
        self.accepting.add(here)
        return start


def _passes(kind: int, arg: object, ch: str) -> bool:
    if kind == _CHAR:
        return ch == arg
    if kind == _NOT_SLASH:
        return ch != "/"
    if kind == _ANY:
        return True
    negated, chars, ranges = cast(_SetSpec, arg)
    if ch == "/":
        return False
    inside = ch in chars or any(lo <= ch <= hi for lo, hi in ranges)
    return inside != negated


class _Cache:
    """The deterministic automaton met so far: sets of NFA states, numbered."""

    def __init__(self, accepting: set[int]) -> None:
        self.ids: dict[frozenset[int], int] = {}
        self.members: list[frozenset[int]] = []
        self.accepts: list[bool] = []
        self.rows: list[dict[str, int]] = []  # state → {character: next state}
        self.folders: dict[str, int] = {}  # a folder ("work/plans") → the state after reading it and "/"
        self.accepting = accepting

    def intern(self, members: frozenset[int]) -> int:
        found = self.ids.get(members)
        if found is None:
            found = self.ids[members] = len(self.members)
            self.rows.append({})
            self.members.append(members)
            self.accepts.append(bool(members & self.accepting))
        return found


class GlobSet:
    """Whether a whole string matches one of several globs (linear in the string;
    thread-safe: one filter serves concurrent searches).

    A glob with at most one unbounded wildcard (``*``, ``**`` or ``**/``: ``*.md``,
    ``work/**``) is matched by ``re`` instead: with one such wildcard a regular expression
    tries each split point once (at most path length × pattern length steps, microseconds),
    and ``re`` runs in C, several times faster than the automaton's Python loop. Globs with
    more go to the automaton, which nothing can make backtrack."""

    def __init__(self, patterns: Sequence[str]) -> None:
        simple = [p for p in patterns if _unbounded(p) <= 1]
        rest = [p for p in patterns if _unbounded(p) > 1]
        self._regex = re.compile("|".join(f"(?:{_regex(p)})" for p in simple), re.DOTALL) if simple else None
        self._nfa = _Nfa()
        self._start = self._closure([self._nfa.add(p) for p in rest])
        self._lock = threading.Lock()
        self._cache = self._new_cache()
        self._automaton = bool(rest)

    def _new_cache(self) -> _Cache:
        cache = _Cache(self._nfa.accepting)
        cache.intern(self._start)  # state 0
        return cache

    def _closure(self, states: Sequence[int]) -> frozenset[int]:
        seen = set(states)
        todo = list(states)
        while todo:
            for nxt in self._nfa.skips[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)

    def __call__(self, text: str) -> bool:
        if self._regex is not None and self._regex.fullmatch(text):
            return True
        return self._automaton and self._run(text)

    def _run(self, text: str) -> bool:
        cache = self._cache
        if len(cache.members) > _DFA_STATES or len(cache.folders) > _FOLDERS:  # start over, never grow for good
            cache = self._cache = self._new_cache()
        folder, slash, name = text.rpartition("/")
        state = 0
        if slash:  # paths share their folders: each folder is read once
            state = cache.folders.get(folder, -1)
            if state < 0:
                state = cache.folders[folder] = self._read(cache, 0, folder + "/")
        return cache.accepts[self._read(cache, state, name)]

    def _read(self, cache: _Cache, state: int, text: str) -> int:
        rows, moves = cache.rows, self._nfa.moves
        for ch in text:
            nxt = rows[state].get(ch)
            if nxt is None:
                reached = [n for s in cache.members[state] for kind, arg, n in moves[s] if _passes(kind, arg, ch)]
                closed = self._closure(reached)
                with self._lock:
                    nxt = rows[state][ch] = cache.intern(closed)
            state = nxt
            if not cache.members[state]:
                break  # no state left: nothing can match any more
        return state


def glob_matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """A function telling whether a path matches one of ``patterns`` (module docstring
    for the syntax). A pattern without a ``/`` also matches the file's own name
    (``*.md``: any Markdown file)."""
    full = GlobSet([p.strip().lstrip("/") for p in patterns])
    names = [p.strip() for p in patterns if "/" not in p.strip()]
    base = GlobSet(names) if names else None

    def match(path: str) -> bool:
        if full(path):
            return True
        return base is not None and base(path.rsplit("/", 1)[-1])

    return match


__all__ = ["MAX_GLOBS", "MAX_GLOB_CHARS", "MAX_WILDCARDS", "GlobSet", "check_glob", "check_globs", "glob_matcher"]
