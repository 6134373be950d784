"""The chat request as the strictest OpenAI-compatible servers accept it.

Pure functions: messages, tools and options in, the JSON body out. Each rule comes from
a server that rejects the alternative (tests/chat/test_chat_wire.py replays them against
a server that validates the way each one does):

* ``content`` is always a string. llama-cpp-python's request model types an assistant
  message's content as ``NotRequired[str]``: ``"content": null`` next to ``tool_calls``
  is answered with HTTP 500 "Input should be a valid string". llama.cpp's llama-server
  wants ``content`` or ``tool_calls`` on every message. ``""`` suits all of them.
* No key is sent as ``null``: llama.cpp reads ``name``, ``tool_call_id`` and a tool
  call's ``id`` into strings and fails on a null (HTTP 500 "type must be string").
* A tool call is ``{"id", "type": "function", "function": {"name", "arguments"}}`` with
  its id echoed as the server gave it, and ``arguments`` a JSON *text*: llama.cpp parses
  it (HTTP 500 "Failed to parse tool call arguments as JSON"), Ollama too (HTTP 400); a
  model's malformed arguments are sent as ``"{}"`` (the tool result says what was wrong).
  An empty ``tool_calls`` list is left out (OpenAI: "[] is too short").
* Every tool has ``parameters`` (required by llama-cpp-python's ``ChatCompletionTool``).
* ``tool_choice`` is sent with every request that offers tools, ``"auto"`` included:
  llama-cpp-python reads a missing ``tool_choice`` as "none" and does not show the model
  the tools at all. (vLLM refuses "auto" unless started with ``--enable-auto-tool-choice``
  — and then it could not call tools anyway; the turn asks again without them.)
  A function name becomes ``{"type": "function", "function": {"name": NAME}}``, which
  llama-cpp-python and vLLM honour and llama.cpp's llama-server takes as "auto"
  (it understands only "auto", "none" and "required"); Ollama ignores tool_choice.
* ``max_tokens`` when asked (OpenAI's own API: ``max_completion_tokens``, which its
  newer models require); ``stream_options`` only to servers documented to accept it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from kbdesk.providers.json_shapes import obj

# servers documented to accept stream_options.include_usage (usage in the last chunk);
# LM Studio and unknown servers may refuse fields they do not know
USAGE_KINDS = frozenset({"openai", "openrouter", "ollama", "vllm"})
TOOL_CHOICES = ("auto", "required", "none")


def chat_payload(
    messages: Sequence[Any],
    model: str,
    *,
    kind: str,
    base_url: str,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: str | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The JSON body of one streamed ``/chat/completions`` request."""
    payload: dict[str, Any] = {"model": model, "messages": wire_messages(messages), "stream": True}
    if tools:
        payload["tools"] = [wire_tool(tool) for tool in tools]
        payload["tool_choice"] = wire_tool_choice(tool_choice)
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive whole number, got {max_tokens!r}")
        payload[_max_tokens_field(kind, base_url)] = max_tokens
    if kind in USAGE_KINDS:
        payload["stream_options"] = {"include_usage": True}
    return payload


def wire_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    return [wire_message(message) for message in messages]


def wire_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise TypeError(f"a chat message must be a dict, got {type(message).__name__}")
    out = {key: value for key, value in message.items() if value is not None}
    out["content"] = _text(message.get("content"))
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [wire_tool_call(call, n) for n, call in enumerate(calls)]
    else:
        out.pop("tool_calls", None)
    if out.get("role") == "tool" and "tool_call_id" in out:
        out["tool_call_id"] = str(out["tool_call_id"])
    return out


def wire_tool_call(call: Any, position: int = 0) -> dict[str, Any]:
    """A tool call as it is echoed back: its id as given, ``arguments`` a JSON text."""
    if hasattr(call, "to_wire"):
        call = call.to_wire()
    if not isinstance(call, dict):
        raise TypeError(f"a tool call must be a dict, got {type(call).__name__}")
    function = obj(call.get("function"))
    call_id = call.get("id")
    return {
        "id": call_id if isinstance(call_id, str) and call_id else f"call_{position}",
        "type": "function",
        "function": {"name": str(function.get("name") or ""), "arguments": json_arguments(function.get("arguments"))},
    }


def json_arguments(arguments: Any) -> str:
    """Arguments as a JSON text: kept verbatim when they parse, ``"{}"`` when they do not."""
    if arguments is None or arguments == "":
        return "{}"
    if not isinstance(arguments, str):
        return json.dumps(arguments, ensure_ascii=False)
    try:
        json.loads(arguments)
    except ValueError:
        return "{}"
    return arguments


def wire_tool(tool: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict):
        return tool  # not a function tool: sent as given, for the server to judge
    function = dict(tool["function"])
    if not isinstance(function.get("parameters"), dict):
        function["parameters"] = {"type": "object", "properties": {}}
    if function.get("description") is None:
        function.pop("description", None)
    return {"type": "function", "function": function}


def wire_tool_choice(choice: str | None) -> str | dict[str, Any]:
    """``"auto"`` for no choice or "auto"; "required"/"none" as they are; any other
    string names the one function the model must call."""
    if choice is None or choice == "auto":
        return "auto"
    if not isinstance(choice, str) or not choice:
        raise ValueError(f"tool_choice must be 'auto', 'required', 'none' or a function name, got {choice!r}")
    if choice in TOOL_CHOICES:
        return choice
    return {"type": "function", "function": {"name": choice}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):  # content parts: their text
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return json.dumps(content, ensure_ascii=False)


def _max_tokens_field(kind: str, base_url: str) -> str:
    host = urlsplit(base_url).hostname or ""
    return "max_completion_tokens" if kind == "openai" and host == "api.openai.com" else "max_tokens"


__all__ = [
    "TOOL_CHOICES",
    "USAGE_KINDS",
    "chat_payload",
    "json_arguments",
    "wire_message",
    "wire_messages",
    "wire_tool",
    "wire_tool_call",
    "wire_tool_choice",
]
