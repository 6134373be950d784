"""Source code → sections at its definitions, each with the names it sits in as its
heading path: a method ``parse`` of class ``Parser`` is the section ``["Parser", "parse"]``
(a result reads ``parser.py § Parser › parse``).

How definitions are found (measured on real projects: docs/FORMATS.md, "Code"):

- **Python**: the standard library's :mod:`ast` — classes and functions at module level
  and inside classes (a function's inner functions stay in its text), each from its
  first decorator to its last line. A file that does not parse is read by the rules below.
- **Everything else**: a definition line by the language's keywords (``func``, ``fn``,
  ``class``, ``def``, ``function``, a C-family signature line ending without ``;``…),
  and its extent by indentation: the lines after it that are indented deeper, blank, or
  close it at its own indentation (``}``, ``end``). Formatted code is indented so; a
  definition badly indented only gets a shorter section, its text is never lost.
  SQL's ``CREATE …`` statements and shell functions are found the same way; a SQL
  statement runs to the next one.

Comment lines and decorators (``@…``) right above a definition belong to it. Lines
outside every definition (imports, constants, the code of a script) are sections of
their own, with the path of the definition they are in (none at the top level). A
section's text begins with a line naming its path (``Parser › parse``,
:func:`~.sections.headed`), as a Markdown section begins with its heading.

A minified or generated bundle (very long lines) fails with that reason instead of
flooding the index with one giant chunk.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from kbdesk.ingest.sections import ExtractionError, Section, headed

_C_FAMILY = re.compile(
    r"^\s*(?!(?:if|for|while|switch|catch|return|else|do|case|new|throw|delete|sizeof|using|typedef)\b)"
    r"(?:[\w:<>\[\],*&~.?@]+\s+)+[*&]*(~?[A-Za-z_][\w:]*)\s*\([^;]*$"
)
_CONTAINER_C = re.compile(
    r"^\s*(?:(?:public|private|protected|internal|static|final|abstract|sealed|partial|export|default|"
    r"open|data|inner|enum|annotation)\s+)*(?:class|interface|enum|record|struct|namespace|object|trait|"
    r"protocol|extension|union)\s+([A-Za-z_][\w:.]*)"
)
_JS = (
    re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)"),
    re.compile(
        r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?(?:class|interface|enum|namespace)\s+([A-Za-z_$][\w$]*)"
    ),
    re.compile(r"^\s*(?:export\s+)?type\s+([A-Za-z_$][\w$]*)\s*(?:<[^=]*>)?\s*=\s*\{"),
    re.compile(
        r"^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"
    ),
    re.compile(
        r"^\s+(?:(?:static|async|get|set|public|private|protected|readonly|override|abstract)\s+)*\*?"
        r"(?!(?:if|for|while|switch|catch|return|function)\b)([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\("
        # lookaheads, each linear: the parameters hold no quotes, braces, "function" or "=>" (a call
        # with a callback, ``it('…', function () {``, is not a method), and the line ends in "{"
        r"(?![^;]*(?:\bfunction\b|=>))(?=[^;'\"`{}]*\)[^;'\"`{}()=]*\{\s*\}?\s*$)"
    ),
)
_RULES: dict[str, tuple[re.Pattern[str], ...]] = {
    "python": (re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)"),),
    "javascript": _JS,
    "typescript": _JS,
    "go": (
        re.compile(r"^func\s+(?:\(\s*\w*\s*\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\)\s*)?([A-Za-z_]\w*)"),
        re.compile(r"^type\s+([A-Za-z_]\w*)"),
    ),
    "rust": (
        re.compile(
            r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:async\s+)?(?:const\s+)?(?:unsafe\s+)?"
            r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_]\w*)"
        ),
        re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|mod|union|macro_rules!)\s*([A-Za-z_]\w*)"),
        re.compile(r"^\s*(?:unsafe\s+)?impl(?:<[^>]*>)?\s+(?:[\w:<>, &']+\s+for\s+)?&?([A-Za-z_][\w:]*)"),
    ),
    "c": (_CONTAINER_C, _C_FAMILY, re.compile(r"^(?!(?:if|for|while|switch|return)\b)([A-Za-z_]\w*)\s*\([^;]*$")),
    "java": (_CONTAINER_C, _C_FAMILY),
    "kotlin": (_CONTAINER_C, re.compile(r"^\s*(?:[\w@]+\s+)*fun\s+(?:<[^>]*>\s*)?(?:[\w.<>]+\.)?([A-Za-z_]\w*)")),
    "swift": (_CONTAINER_C, re.compile(r"^\s*(?:[\w@]+\s+)*func\s+([A-Za-z_]\w*)")),
    "php": (
        _CONTAINER_C,
        re.compile(r"^\s*(?:(?:public|private|protected|static|final|abstract)\s+)*function\s+&?([A-Za-z_]\w*)"),
    ),
    "ruby": (re.compile(r"^\s*(?:def\s+(?:self\.)?([\w?!=\[\]<>+*/%-]+)|(?:class|module)\s+([A-Z][\w:]*))"),),
    "lua": (re.compile(r"^\s*(?:local\s+)?function\s+([\w.:]+)"),),
    "perl": (re.compile(r"^\s*(?:sub\s+(\w+)|package\s+([\w:]+))"),),
    "r": (re.compile(r"^\s*([A-Za-z.][\w.]*)\s*(?:<-|=)\s*function\s*\("),),
    "matlab": (
        re.compile(r"^\s*function\s+(?:[^=(]*=\s*)?([A-Za-z]\w*)"),
        re.compile(r"^\s*classdef\s+(?:\([^)]*\)\s*)?([A-Za-z]\w*)"),
        re.compile(r"^\s*@(?:interface|implementation|protocol)\s+([A-Za-z_]\w*)"),
        re.compile(r"^[-+]\s*\([^)]*\)\s*([A-Za-z_]\w*)"),
        _C_FAMILY,
    ),
    "shell": (re.compile(r"^\s*(?:function\s+([\w:.-]+)|([A-Za-z_][\w:.-]*)\s*\(\s*\))\s*\{?\s*(?:#.*)?$"),),
    "sql": (
        re.compile(
            r"^\s*create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+|unique\s+|materialized\s+)?"
            r"(?:table|view|function|procedure|index|trigger|type|schema|sequence)\s+(?:if\s+not\s+exists\s+)?"
            r"([\w.\"`\[\]]+)",
            re.IGNORECASE,
        ),
    ),
}
_CLOSER = re.compile(r"^(?:[})\]]|end\b|fi\b|done\b|esac\b|\{\s*$|(?:public|private|protected)\s*:)")
_ONLY_CLOSING = re.compile(r"[\s})\];,]*|(?:\s*end\b[\s;]*)+")
_COMMENT = re.compile(r"^\s*(?:#(?!!)|//|/\*|\*|--|;|@|%|\"\"\"|'''|\[\[|<!--)")
MAX_DEFINITION_LINE = 500  # longer lines are not definitions (and keep the rules' matching linear)
MINIFIED_LINE = 5000  # a line this long in code is a bundle, not something a person wrote
MINIFIED_AVERAGE = 400


@dataclass
class _Def:
    start: int  # first line (0-based), comments and decorators above included
    end: int  # last line, inclusive
    path: list[str]


def extract_code(text: str, language: str) -> list[Section]:
    """Sections of ``text`` (source in ``language``: a key of the reader's rules)."""
    lines = text.split("\n")
    _refuse_minified(lines, len(text))
    defs = _python_defs(text) if language == "python" else None
    if defs is None:
        defs = _rule_defs(lines, language)
    return _sections(lines, defs, {"language": language})


def _refuse_minified(lines: list[str], size: int) -> None:
    longest = max((len(line) for line in lines), default=0)
    if size > 2000 and (longest > MINIFIED_LINE or size / max(len(lines), 1) > MINIFIED_AVERAGE):
        raise ExtractionError(f"minified or generated code (a line of {longest:,} characters): not indexed")


# --------------------------------------------------------------------------- Python


def _python_defs(text: str) -> list[_Def] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: list[_Def] = []

    def visit(body: Iterable[ast.stmt], path: list[str]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
                here = [*path, node.name]
                found.append(_Def(first, (node.end_lineno or node.lineno) - 1, here))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, here)

    visit(tree.body, [])
    return found


# --------------------------------------------------------------------------- rules


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.lstrip(" \t").expandtabs(4)) if line[:1] in " \t" else 0


def _name(match: re.Match[str]) -> list[str]:
    groups = [g for g in match.groups() if g]
    if not groups:
        return []
    if len(groups) > 1:  # Go's receiver type, then the method
        return [groups[0], groups[-1]]
    name = groups[0].strip('"`[]')
    if "::" in name and not name.startswith("::"):  # C++ Parser::parse
        return [part for part in name.split("::") if part]
    return [name]


def _rule_defs(lines: list[str], language: str) -> list[_Def]:
    rules = _RULES.get(language, ())
    starts: list[tuple[int, list[str]]] = []
    for i, line in enumerate(lines):
        if not line.strip() or len(line) > MAX_DEFINITION_LINE:
            continue
        for rule in rules:
            match = rule.match(line)
            if match is not None:
                names = _name(match)
                if names:
                    starts.append((i, names))
                break
    found: list[_Def] = []
    stack: list[_Def] = []
    for k, (i, names) in enumerate(starts):
        if language == "sql":
            end = starts[k + 1][0] - 1 if k + 1 < len(starts) else len(lines) - 1
        else:
            end = _block_end(lines, i)
        while stack and stack[-1].end < i:
            stack.pop()
        parent = stack[-1].path if stack else []
        if len(names) > 1 and parent[-1:] == names[:1]:
            names = names[1:]
        entry = _Def(i, end, [*parent, *names])
        found.append(entry)
        stack.append(entry)
    return found


def _block_end(lines: list[str], i: int) -> int:
    """The last line of the definition that starts at line ``i`` (see the module's docstring)."""
    head = lines[i].rstrip()
    if head.endswith(";") or re.search(r"=>\s*[^{\s].*$", head):
        return i  # a declaration, or a one-line arrow function
    depth = _indent(lines[i])
    end = i
    body = False  # a line indented deeper was seen
    for j in range(i + 1, len(lines)):
        line = lines[j]
        stripped = line.strip()
        if not stripped:
            continue
        indent = _indent(line)
        if indent > depth:
            end, body = j, True
            continue
        if indent == depth and _CLOSER.match(stripped) and not (stripped.startswith("{") and body):
            end = j
            if stripped[0] != "{" and not stripped.endswith(":"):  # "public:" goes on
                break
            continue
        break
    return end


# --------------------------------------------------------------------------- sections


def _sections(lines: list[str], defs: list[_Def], extra: dict) -> list[Section]:
    owner: list[int] = [-1] * len(lines)
    for entry in sorted(range(len(defs)), key=lambda k: defs[k].start):
        d = defs[entry]
        start = d.start
        # comments and decorators right above it, at its indentation, are its own
        while start > 0 and owner[start - 1] == owner[d.start] and _is_leading(lines, start - 1, d.start):
            start -= 1
        for line in range(start, min(d.end, len(lines) - 1) + 1):
            owner[line] = entry
    sections: list[Section] = []
    begin = 0
    for i in range(1, len(lines) + 1):
        if i == len(lines) or owner[i] != owner[begin]:
            body = "\n".join(lines[begin:i]).strip("\n")
            if sections and _ONLY_CLOSING.fullmatch(body):
                sections[-1].text += "\n" + body  # a closing brace or "end" is not a section
            elif body.strip():
                path = list(defs[owner[begin]].path) if owner[begin] >= 0 else []
                sections.append(Section(headed(path, body), {"headings": path, **extra}))
            begin = i
    if not sections:
        raise ExtractionError("file has no text")
    return sections


def _is_leading(lines: list[str], line: int, first: int) -> bool:
    text = lines[line]
    return bool(text.strip()) and _indent(text) == _indent(lines[first]) and _COMMENT.match(text) is not None
