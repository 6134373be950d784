"""Many rows in one SQLite statement step: ``INSERT … SELECT … FROM json_each(?)``.

Python's sqlite3 module lets go of the interpreter lock around every statement step, and
``executemany`` is one step per row. While other threads have Python work to do (an
ingestion run's extraction, the app's screen), taking the lock back after each step
waits for them to reach the interpreter's switch interval (5 ms): a writer inserting
16,000 rows next to two busy threads took minutes instead of half a second
(``bench/bench_ingest.py`` found it; ``bench/bench_rows.py`` shows it alone). Sent as one
JSON array and inserted by one ``INSERT … SELECT``, the rows cost one step: the lock is
let go once and the database works on the other core meanwhile.

Only what JSON carries exactly goes this way — text without NUL characters, integers,
booleans, NULL, and bytes as hex (``unhex``, SQLite 3.41) — so every row reads back as it
would have from ``executemany``. Rows holding anything else (floats), few rows, or an
SQLite older than 3.38 (no ``->>``) take ``executemany``. Two shapes are rewritten. ``INSERT``: the rows go in in their
order, so ``ON CONFLICT … DO NOTHING`` keeps the same first row. ``UPDATE … WHERE id = ?
[AND …]`` when every row names a different id: each table row is then changed at most
once, so no row's update can see another's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

MIN_ROWS = 8  # fewer rows: executemany costs no more
MAX_PAYLOAD = 4 * 1024 * 1024  # characters of JSON per statement (bounds the memory of one step)
_INSERT = re.compile(r"^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+\w+\s*\([^)]*\)\s*VALUES\s*\(", re.I)
_BIG = 1 << 63
_ENCODE = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":")).encode


def supported(sqlite_version: str) -> int:
    """What this SQLite can take in one step: 0 nothing, 1 rows without bytes (``->>``,
    3.38), 2 bytes too (``unhex``, 3.41)."""
    parts = tuple(int(p) for p in sqlite_version.split(".")[:2] if p.isdigit())
    return 2 if parts >= (3, 41) else 1 if parts >= (3, 38) else 0


_LITERAL = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


def _plain_literals(sql: str) -> bool:
    """No quoted literal or name in ``sql`` holds a placeholder or a bracket."""
    return not any(ch in lit.group() for lit in _LITERAL.finditer(sql) for ch in "?()")


def _values_end(sql: str, start: int) -> int:
    """The index just past the ``)`` closing the VALUES list opened before ``start``."""
    depth = 1
    for i in range(start, len(sql)):
        ch = sql[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def rewrite(sql: str, hexed: frozenset[int] = frozenset()) -> str | None:
    """``INSERT INTO t(cols) VALUES (…?…) [rest]`` as ``INSERT INTO t(cols) SELECT
    (…r.value->>k…) FROM json_each(?) AS r WHERE true [rest]`` (``unhex(…)`` for the
    placeholders numbered in ``hexed``); None for anything else."""
    head = _INSERT.match(sql)
    if head is None or not _plain_literals(sql):
        return None
    end = _values_end(sql, head.end())
    if end < 0:
        return None
    values = sql[head.end():end - 1]
    count = 0

    def column(_m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        if count - 1 in hexed:
            return f"unhex(kbdesk_row.value ->> {count - 1})"
        return f"(kbdesk_row.value ->> {count - 1})"

    exprs = re.sub(r"\?", column, values)
    rest = sql[end:]
    if "?" in rest:
        return None
    head_text = sql[:head.end()]  # "INSERT INTO t(cols) VALUES ("
    prefix = head_text[:head_text.upper().rindex("VALUES")]
    # "WHERE true": an upsert clause after INSERT … SELECT needs it to parse
    return f"{prefix}SELECT {exprs} FROM json_each(?) AS kbdesk_row WHERE true{rest}"


_UPDATE_BY_ID = re.compile(r"^\s*UPDATE\s+(\w+)\s+SET\s+(.*)\s+WHERE\s+(id\s*=\s*\?(?:\s+AND\s+.*)?)$",
                           re.I | re.S)


def rewrite_update(sql: str) -> tuple[str, int] | None:
    """``UPDATE t SET … WHERE id = ? [AND …]`` as ``UPDATE t SET … FROM (rows) AS r WHERE
    t.id = r->>k …``, and the position of the id among the placeholders; None for
    anything else. Each row of the call must name a different id (the caller checks):
    then every table row is changed once at most, as ``executemany`` would."""
    m = _UPDATE_BY_ID.match(sql)
    if m is None or not _plain_literals(sql):
        return None
    table, sets, where = m.groups()
    count = 0

    def column(_m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"(kbdesk_row.v ->> {count - 1})"

    sets = re.sub(r"\?", column, sets)
    key = count
    where = re.sub(r"\?", column, where)
    where = re.sub(r"^id\b", f"{table}.id", where)
    # the rows as one column "v": json_each's own columns (id, key, …) stay out of the names
    return (f"UPDATE {table} SET {sets} FROM (SELECT value AS v FROM json_each(?)) AS kbdesk_row "
            f"WHERE {where}"), key


def _columns(rows: Sequence[Sequence[Any]], level: int) -> frozenset[int] | None:
    """The positions holding bytes (sent as hex), or None when a value cannot go as JSON."""
    hexed: set[int] = set()
    for row in rows:
        for k, v in enumerate(row):
            t = type(v)
            if t is str:
                if "\x00" in v:
                    return None
            elif t is int:
                if not -_BIG <= v < _BIG:
                    return None
            elif t is bytes:
                if level < 2:
                    return None
                hexed.add(k)
            elif v is not None and t is not bool:
                return None
    for row in rows:  # a column sent as hex holds bytes or NULL in every row
        for k in hexed:
            if row[k] is not None and type(row[k]) is not bytes:
                return None
    return frozenset(hexed)


def run_many(conn: Any, sql: str, rows: Sequence[Sequence[Any]], level: int = 2) -> bool:
    """Run ``sql`` for ``rows`` in as few steps as the payload allows; False (nothing
    done) when it must be ``executemany``. ``level``: :func:`supported`."""
    if level < 1 or len(rows) < MIN_ROWS:
        return False
    hexed = _columns(rows, level)
    if hexed is None:
        return False
    one = rewrite(sql, hexed)
    if one is None:
        if hexed:
            return False
        found = rewrite_update(sql)
        if found is None:
            return False
        one, key = found
        if len({row[key] for row in rows}) != len(rows):
            return False  # one id twice: the order of the updates matters
    if hexed:
        rows = [[v.hex() if k in hexed and v is not None else v for k, v in enumerate(row)] for row in rows]
    whole = _ENCODE(rows)  # one call into the C encoder
    if len(whole) <= MAX_PAYLOAD:
        conn.execute(one, (whole,))
        return True
    group: list[str] = []
    size = 0
    for row in rows:
        text = _ENCODE(row)
        if group and size + len(text) > MAX_PAYLOAD:
            conn.execute(one, ("[" + ",".join(group) + "]",))
            group, size = [], 0
        group.append(text)
        size += len(text) + 1
    conn.execute(one, ("[" + ",".join(group) + "]",))
    return True
