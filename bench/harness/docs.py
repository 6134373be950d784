"""Generated sections of ``docs/BENCHMARKS*.md``: a bench rewrites its part of a file between two
markers and keeps everything else (the hand-written discussion) as it is."""

from __future__ import annotations

from pathlib import Path

DISCUSSION = ("<!-- discussion:start -->", "<!-- discussion:end -->")
GENERATED = ("<!-- generated:start -->", "<!-- generated:end -->")
PLACEHOLDER = "(Conclusions are written by hand here; the bench keeps this section.)"


def kept_section(path: Path, markers: tuple[str, str] = DISCUSSION, default: str = PLACEHOLDER) -> str:
    """The text between the markers in ``path`` (stripped), or ``default`` when there is none."""
    start, end = markers
    try:
        text = path.read_text()
    except OSError:
        return default
    a, b = text.find(start), text.find(end)
    return text[a + len(start) : b].strip() if a >= 0 and b > a else default


def with_markers(body: str, markers: tuple[str, str] = DISCUSSION) -> str:
    return f"{markers[0]}\n{body}\n{markers[1]}"


def replace_section(path: Path, body: str, markers: tuple[str, str] = GENERATED) -> None:
    """Put ``body`` between the markers in ``path`` (the markers are added at the end if missing)."""
    start, end = markers
    text = path.read_text() if path.exists() else ""
    if start not in text or end not in text:
        text = text + ("\n" if text and not text.endswith("\n") else "") + f"{start}\n{end}\n"
    head, rest = text.split(start, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + start + "\n" + body.strip("\n") + "\n" + end + rest.split(end, 1)[1])
