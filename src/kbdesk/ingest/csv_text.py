"""CSV / TSV → one section, one line per row: ``header: value; header: value``.

The delimiter (``,`` ``;`` tab ``|``) is the one that splits the first rows most
consistently. Whitespace inside a cell (newlines of quoted fields included) is
collapsed to single spaces; empty cells and empty rows are left out.
"""

from __future__ import annotations

import csv
import io

from kbdesk.ingest.sections import ExtractionError, Section

# The csv module refuses a field over 128 KiB by default, failing the whole file; the
# file's own size limit (storage.max_file_mb) is the bound that matters. (Process-wide:
# nothing else in kbdesk reads CSV.)
csv.field_size_limit(2**31 - 1)


def _delimiter(text: str) -> str:
    sample = text[:65536].split("\n")[:50]

    def score(delimiter: str) -> tuple[int, int]:
        try:
            rows = [r for r in csv.reader(sample[:-1] or sample, delimiter=delimiter) if r]
        except csv.Error:
            return (0, 0)
        width = len(rows[0]) if rows else 0
        return (sum(len(r) == width for r in rows) if width > 1 else 0, width)

    return max(",;\t|", key=score)


def extract_csv(text: str) -> list[Section]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text))
    try:
        header = next(reader, [])
        names = [" ".join(h.split()) or f"column {i + 1}" for i, h in enumerate(header)]
        prefixes = [f"{name}: " for name in names]  # columns past the header: "column 7: "
        width = len(prefixes)
        lines: list[str] = []
        append = lines.append
        for row in reader:
            if len(row) > width:
                prefixes += [f"column {i + 1}: " for i in range(width, len(row))]
                width = len(prefixes)
            # a cell counts if it has a non-space character (what survives the collapse)
            line = "; ".join(
                [
                    prefix + " ".join(value.split())
                    for prefix, value in zip(prefixes, row, strict=False)
                    if value and not value.isspace()
                ]
            )
            if line:
                append(line)
    except csv.Error as exc:
        raise ExtractionError(f"CSV could not be parsed ({exc})") from None
    if not lines:
        raise ExtractionError("CSV has no data rows")
    return [Section("\n".join(lines), {})]
