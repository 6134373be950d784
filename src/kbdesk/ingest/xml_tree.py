"""A small, safe XML reader for the parts of Office, OpenDocument and EPUB files.

What the standard library's parsers allow and a document from a stranger must not do:

- **no entities**: a document that declares an entity (the "billion laughs" bomb, or
  one naming a file on this machine) is refused; a DOCTYPE without declarations is
  allowed (EPUB's XHTML has one);
- **no external anything**: external entities and DTDs are never fetched or read;
- **bounded nesting**: elements deeper than :data:`MAX_DEPTH` fail the document (the
  tree is walked without recursion either way);
- **bounded time**: every 4,096 elements the document's clock is looked at
  (:func:`~kbdesk.ingest.limits.check_time`);
- **bounded memory**: a part is fed to the parser in pieces as it is inflated (never
  whole), and a tree holds at most :data:`MAX_TREE_ELEMENTS` elements. Large parts (a
  Word body) are read with :func:`elements`, which keeps one block at a time.

Names are kept by their *local* part (``w:p`` and ``{…}p`` are both ``"p"``), attributes
too: the formats read here never use one local name for two things that matter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any
from xml.parsers import expat

from kbdesk.ingest.limits import check_time
from kbdesk.ingest.sections import ExtractionError

MAX_DEPTH = 512  # Word nests tables in tables; nothing real comes near this
# Elements one tree (or one block of :func:`elements`) may hold: ~200 bytes each, so
# ~200 MB at most. A 300-page report's body is ~300,000; a part over this is too large
# by nature (it fails as the file's own problem, not tried again until it changes).
MAX_TREE_ELEMENTS = 1_000_000

Source = bytes | Iterable[bytes]  # a part's bytes, or its pieces as they are inflated
_NO_ATTRS: dict[str, str] = {}  # shared by every element without attributes (never written to)


class Node:
    """One element: local ``tag``, ``attrs`` (local names), ``children``, and the text
    before its first child (``text``) and after it (``tail``)."""

    __slots__ = ("attrs", "children", "tag", "tail", "text")

    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Node] = []
        self.text = ""
        self.tail = ""

    def get(self, name: str, default: str = "") -> str:
        return self.attrs.get(name, default)

    def iter(self, tag: str | None = None) -> Iterator[Node]:
        """This element and every element inside it, in document order."""
        stack = [self]
        while stack:
            node = stack.pop()
            if tag is None or node.tag == tag:
                yield node
            stack.extend(reversed(node.children))

    def find(self, tag: str) -> Node | None:
        """The first element named ``tag`` inside this one (at any depth)."""
        return next((n for n in self.iter(tag) if n is not self), None)

    def child(self, tag: str) -> Node | None:
        return next((c for c in self.children if c.tag == tag), None)

    def text_content(self) -> str:
        """All the text inside, in order."""
        parts: list[str] = []
        stack: list[Node | str] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                parts.append(item)
                continue
            parts.append(item.text)
            for c in reversed(item.children):
                stack.append(c.tail)
                stack.append(c)
        return "".join(parts)


def _parser(what: str) -> Any:
    p = expat.ParserCreate(namespace_separator="}")
    p.buffer_text = True

    def refuse_entity(*_args: Any) -> None:
        raise ExtractionError(f"{what} declares XML entities, which kbdesk does not expand")

    def refuse_external(*_args: Any) -> int:
        raise ExtractionError(f"{what} refers to an external XML entity, which kbdesk does not read")

    p.EntityDeclHandler = refuse_entity
    p.UnparsedEntityDeclHandler = refuse_entity
    p.ExternalEntityRefHandler = refuse_external
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    return p


class _Names(dict[str, str]):
    """Qualified name → local name, each computed once per document (names repeat a lot)."""

    def __missing__(self, name: str) -> str:
        local = self[name] = name.rpartition("}")[2]
        return local


def _too_many(what: str) -> ExtractionError:
    return ExtractionError(f"{what} is too large to read (over {MAX_TREE_ELEMENTS:,} elements in one piece)")


def parse(data: Source, what: str) -> Node:
    """The element tree of ``data``; raises ExtractionError (``what`` names the part)."""
    root = Node("", {})
    stack = [root]
    names = _Names()

    count = [0]

    def start(name: str, attrs: dict[str, str]) -> None:
        if len(stack) > MAX_DEPTH:
            raise ExtractionError(f"{what} nests elements more than {MAX_DEPTH} deep")
        count[0] += 1
        if not count[0] & 4095:
            check_time()
            if count[0] > MAX_TREE_ELEMENTS:
                raise _too_many(what)
        node = Node(names[name], {names[k]: v for k, v in attrs.items()} if attrs else _NO_ATTRS)
        stack[-1].children.append(node)
        stack.append(node)

    def end(_name: str) -> None:
        stack.pop()

    def data_(text: str) -> None:
        top = stack[-1]
        if top.children:
            top.children[-1].tail += text
        else:
            top.text += text

    p = _parser(what)
    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = data_
    _run(p, data, what)
    if not root.children:
        raise ExtractionError(f"{what} is empty")
    return root.children[0]


def elements(
    data: Source,
    what: str,
    depth: int,
    on_element: Callable[[Node, str], None],
    split: frozenset[str] = frozenset(),
    within: frozenset[str] | None = None,
) -> None:
    """Read a large part one block at a time: each element at ``depth`` (the root is at
    1) or deeper that is not inside another such element is built as a tree, handed to
    ``on_element(block, container)`` when it ends (``container``: the tag of the element
    at ``depth - 1`` it sits in), and dropped. ``within``: only blocks in containers of
    these names (the others are skipped unread). An element named in ``split`` is not
    held whole: its children are handed over one by one as they end, then the element
    itself with no children (a table: its rows, then the table). Memory is one block's."""
    # the open elements: a Node while a block is built (or a split one is open), the tag
    # of those above the blocks; a skipped container is "" and so is all inside it
    stack: list[Node | str] = []
    names = _Names()
    held = [0, 0]  # elements in the block being built, elements seen
    container = [""]

    def start(name: str, attrs: dict[str, str]) -> None:
        if len(stack) >= MAX_DEPTH:
            raise ExtractionError(f"{what} nests elements more than {MAX_DEPTH} deep")
        held[1] += 1
        if not held[1] & 4095:
            check_time()
        tag = names[name]
        parent = stack[-1] if stack else None
        if isinstance(parent, Node) and parent.tag != _SPLIT:  # inside a block
            node = Node(tag, {names[k]: v for k, v in attrs.items()} if attrs else _NO_ATTRS)
            parent.children.append(node)
            held[0] += 1
            if held[0] > MAX_TREE_ELEMENTS:
                raise _too_many(what)
            stack.append(node)
            return
        if parent == "" and stack:  # inside a container that is not read
            stack.append("")
            return
        if not isinstance(parent, Node) and len(stack) + 1 < depth:  # above the blocks
            stack.append(tag)
            return
        if not isinstance(parent, Node):  # a block's container
            container[0] = parent or ""
            if within is not None and container[0] not in within:
                stack.append("")
                return
        node = Node(tag, {names[k]: v for k, v in attrs.items()} if attrs else _NO_ATTRS)
        if tag in split:
            node.text = tag  # the real name, kept while it is open
            node.tag = _SPLIT
        else:
            held[0] = 1
        stack.append(node)

    def end(_name: str) -> None:
        node = stack.pop()
        if not isinstance(node, Node):
            return
        parent = stack[-1] if stack else None
        if node.tag == _SPLIT:
            node.tag, node.text = node.text, ""
            on_element(node, container[0])
        elif not isinstance(parent, Node) or parent.tag == _SPLIT:
            held[0] = 0
            on_element(node, container[0])

    def data_(text: str) -> None:
        top = stack[-1] if stack else None
        if not isinstance(top, Node) or top.tag == _SPLIT:
            return  # text between blocks (indentation)
        if top.children:
            top.children[-1].tail += text
        else:
            top.text += text

    p = _parser(what)
    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = data_
    _run(p, data, what)


_SPLIT = "\x00split"  # the tag of an element of ``split`` while it is open


def stream(
    data: Source,
    what: str,
    start: Callable[[str, dict[str, str]], None],
    end: Callable[[str], None],
    text: Callable[[str], None],
) -> None:
    """Parse ``data`` without building a tree (large sheets): the callbacks get local names."""
    depth = [0]
    names = _Names()

    count = [0]

    def on_start(name: str, attrs: dict[str, str]) -> None:
        depth[0] += 1
        if depth[0] > MAX_DEPTH:
            raise ExtractionError(f"{what} nests elements more than {MAX_DEPTH} deep")
        count[0] += 1
        if not count[0] & 4095:
            check_time()
        start(names[name], {names[k]: v for k, v in attrs.items()} if attrs else {})

    def on_end(name: str) -> None:
        depth[0] -= 1
        end(names[name])

    p = _parser(what)
    p.StartElementHandler = on_start
    p.EndElementHandler = on_end
    p.CharacterDataHandler = text
    _run(p, data, what)


def _run(p: Any, data: Source, what: str) -> None:
    try:
        if isinstance(data, bytes | bytearray):
            p.Parse(data, True)
        else:
            for piece in data:
                p.Parse(piece, False)
            p.Parse(b"", True)
    except ExtractionError:
        raise
    except expat.ExpatError as exc:
        raise ExtractionError(
            f"{what} is damaged (XML error: {expat.ErrorString(exc.code)}, line {exc.lineno})"
        ) from None
    except RecursionError:
        raise ExtractionError(f"{what} nests elements too deeply") from None
    except LookupError:  # an XML declaration naming an encoding Python does not know
        raise ExtractionError(f"{what} is damaged (its XML declares an unknown encoding)") from None
