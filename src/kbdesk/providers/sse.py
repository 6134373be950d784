"""Reading a streamed ``/chat/completions`` answer: server-sent events and tool-call deltas.

The stream is lines of ``data: {json chunk}``, ended by ``data: [DONE]``; blank lines,
comments (``:``) and other fields (``event:``, ``id:``, ``retry:``) are skipped. Each
chunk carries ``choices[0].delta`` with a piece of ``content`` and/or ``tool_calls``
fragments: the first fragment of a call has its ``index``, ``id`` and
``function.name``; later ones add pieces of ``function.arguments`` (a JSON text)
under the same ``index``. ``finish_reason`` arrives on the last chunk.

Servers differ: some reuse index 0 for parallel calls and tell them apart only by a
new id with a new name, some send the arguments as an object, some repeat the whole
name on every fragment. :class:`ToolCallAssembler` accepts all of those.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kbdesk.providers.json_shapes import obj, text


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str
    """The raw JSON text the model produced (possibly malformed: the caller decides)."""

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class Completion:
    """One whole answer of the model: text and/or tool calls."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    """The server's finish_reason: "stop", "length" (cut at ``max_tokens`` or the
    context), "tool_calls"; None when the stream ended with [DONE] but did not say."""
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def finish(self) -> str | None:
        """Same as :attr:`finish_reason`."""
        return self.finish_reason


@dataclass
class _Slot:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Collects ``delta.tool_calls`` fragments into whole calls, in order of first sight."""

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}

    def add(self, fragment: object) -> None:
        if not isinstance(fragment, dict):
            return
        function = obj(fragment.get("function"))
        call_id = text(fragment.get("id"))
        name = text(function.get("name"))
        slot = self._slot_for(fragment.get("index"), call_id, name)
        if call_id and not slot.id:
            slot.id = call_id
        if name and name != slot.name and not slot.name.endswith(name):
            slot.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot.parts.append(arguments)
        elif isinstance(arguments, (dict, list)):
            slot.parts.append(json.dumps(arguments))

    def _slot_for(self, index: object, call_id: str, name: str) -> _Slot:
        if isinstance(index, int) and not isinstance(index, bool):
            current = self._by_index.get(index)
            # a new id with a new name at a used index: another call (parallel calls, one index)
            if current is not None and not (call_id and name and current.id and call_id != current.id):
                return current
            self._by_index[index] = self._new()
            return self._by_index[index]
        known = next((s for s in self._slots if call_id and s.id == call_id), None)
        if known is not None:
            return known
        if call_id or not self._slots:
            return self._new()
        return self._slots[-1]

    def _new(self) -> _Slot:
        self._slots.append(_Slot())
        return self._slots[-1]

    def calls(self) -> list[ToolCall]:
        return [ToolCall(s.id or f"call_{n}", s.name, "".join(s.parts)) for n, s in enumerate(self._slots)]


def sse_data(line: str) -> str | None:
    """The payload of a ``data:`` line, or None for any other line."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def read_usage(body: object) -> dict[str, int]:
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return {}
    return {
        k: v
        for k, v in usage.items()
        if k in ("prompt_tokens", "completion_tokens", "total_tokens") and type(v) is int and v >= 0
    }


def whole_completion(body: object) -> Completion:
    """A non-streamed answer (a server that ignored ``stream: true``)."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("expected a JSON object with a 'choices' list")
    message = obj(choices[0].get("message"))
    assembler = ToolCallAssembler()
    for position, call in enumerate(message.get("tool_calls") or []):
        if isinstance(call, dict):
            assembler.add({**call, "index": call.get("index", position)})
    content = message.get("content")
    return Completion(
        content if isinstance(content, str) else "",
        assembler.calls(),
        choices[0].get("finish_reason"),
        read_usage(body),
    )
