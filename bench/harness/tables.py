"""Markdown tables rendered from data, so the tables in ``docs/`` are produced, never typed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def fmt_ms(x: float) -> str:
    """Milliseconds with two decimals below 10, one above."""
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def markdown_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, *, align: str | None = None
) -> str:
    """A Markdown table of ``rows`` (dicts: column header → cell).

    ``columns`` orders the columns (default: the first row's keys; a missing cell is "—").
    ``align`` has one letter per column, ``l`` or ``r`` (default: the first column left, the rest
    right). Cells are shown as given: strings as they are, ints as digits, floats with two decimals,
    None as "—"; format anything else before.
    """
    columns = list(columns if columns is not None else (rows[0] if rows else []))
    align = align or "l" + "r" * (len(columns) - 1)
    if len(align) != len(columns):
        raise ValueError(f"align {align!r} has {len(align)} letters for {len(columns)} columns")
    lines = ["| " + " | ".join(columns) + " |", "|" + "".join("---|" if a == "l" else "---:|" for a in align)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)
