"""A folder's ``.gitignore`` and ``.ignore`` files, as git (and ripgrep) read them.

Each folder's files apply to the paths under that folder; a deeper file's rule wins over
a shallower one's, and within a file the last matching line wins (``!keep.log``
re-includes). A folder that is ignored is not walked at all, so nothing under it comes
back (as in git). Patterns are git's (``pathspec``'s ``GitIgnoreSpec``), matched per path
in time linear in the patterns; an ignore file larger than :data:`MAX_BYTES` or with more
than :data:`MAX_PATTERNS` lines is read up to there.

Only the files inside the folder given are read (not those of folders above it, nor git's
global excludes). ``--no-ignore`` (``no_ignore=True``) reads every file.

Glob patterns become backtracking regular expressions, which a pattern like
``*a*a*a*a*a*b`` makes exponential in the length of a name (measured: 30 characters took
1.8 s against one such pattern). So a line with more than :data:`MAX_STARS` ``*`` in one
path segment (``**`` apart), more than :data:`MAX_QUESTION_MARKS` ``?`` or longer than
:data:`MAX_PATTERN` characters is left out; nothing real comes near these.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IGNORE_FILES = (".gitignore", ".ignore")
MAX_BYTES = 256 * 1024
MAX_PATTERNS = 1000
MAX_PATTERN = 256
MAX_STARS = 2
MAX_QUESTION_MARKS = 10


def bounded(line: str) -> bool:
    """Whether a pattern line is within the bounds above (see the module's docstring)."""
    if len(line) > MAX_PATTERN or line.count("?") > MAX_QUESTION_MARKS:
        return False
    return all(segment == "**" or segment.count("*") <= MAX_STARS for segment in line.strip().split("/"))


@dataclass(frozen=True)
class Rules:
    prefix: str  # the folder the file is in, relative to the root ("" or "a/b/")
    spec: Any  # pathspec.GitIgnoreSpec
    # all its patterns as one expression: a path none of them matches (most paths) is
    # settled by one match in C instead of a Python loop over the patterns
    any_match: re.Pattern[str] | None = None


def _any_match(spec: Any) -> re.Pattern[str] | None:
    try:
        pieces = [p.regex.pattern.replace("(?P<ps_d>", "(?:") for p in spec.patterns if p.include is not None]
        return re.compile("|".join(f"(?:{piece})" for piece in pieces)) if pieces else None
    except (AttributeError, re.error):
        return None  # a pathspec that keeps its patterns otherwise: every path is checked in full


def read_rules(folder: str, prefix: str) -> list[Rules]:
    """The rules of the ignore files in ``folder`` (whose path relative to the root is
    ``prefix``); none when it has none (or they cannot be read)."""
    lines: list[str] = []
    for name in IGNORE_FILES:
        try:
            with open(os.path.join(folder, name), "rb") as f:
                raw = f.read(MAX_BYTES)
        except OSError:
            continue
        lines += [line for line in raw.decode("utf-8", "replace").splitlines() if bounded(line)][:MAX_PATTERNS]
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return []
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return [Rules(prefix, spec, _any_match(spec))]


def ignored(rules: list[Rules], rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` (relative to the root) is ignored by ``rules`` (shallowest first)."""
    for rule in reversed(rules):  # the deepest file that has a say decides
        tail = rel[len(rule.prefix) :] + ("/" if is_dir else "")
        if rule.any_match is not None and rule.any_match.match(tail) is None:
            continue  # no pattern of this file matches: it has no say
        verdict = rule.spec.check_file(tail).include
        if verdict is not None:
            return bool(verdict)
    return False


class IgnoredUnder:
    """Whether a file under one of ``roots`` is named by the ignore files on its way down
    from that root (what a folder walk would have left out); each folder's files are read
    once. For ``--sync``: a file that is still there but now ignored leaves the KB."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.rules: dict[str, list[Rules]] = {}

    def __call__(self, path: Path) -> bool:
        root = next((r for r in self.roots if r in path.parents), None)
        if root is None:
            return False
        parts = path.relative_to(root).parts
        rules: list[Rules] = []
        for depth in range(len(parts)):
            prefix = "".join(p + "/" for p in parts[:depth])
            if prefix not in self.rules:
                self.rules[prefix] = read_rules(os.path.join(root, *parts[:depth]), prefix)
            rules = rules + self.rules[prefix]
            rel = prefix + parts[depth]
            if rules and ignored(rules, rel, depth < len(parts) - 1):
                return True
        return False
