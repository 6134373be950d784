"""How real servers judge a chat request, for ``FakeChat.strict`` (see fake_chat.py).

Each function returns ``(status, error body)`` for a request the server would refuse, or
None. The rules are the servers' own, read from their request models and parsers:

* ``llama-cpp-python`` (PyPI 0.3.x, ``llama_cpp/llama_types.py`` + FastAPI): messages are
  TypedDicts validated by pydantic; an assistant message's ``content`` is
  ``NotRequired[str]`` (null refused), a tool message needs ``tool_call_id: str``, a tool
  call needs ``id``, ``type: "function"`` and string ``name``/``arguments``, a tool needs
  ``parameters``. Its route handler turns the validation error into HTTP 500 with
  FastAPI's text ("1 validation error:\\n  {'type': 'string_type', ... 'msg': 'Input should
  be a valid string', ...}"). Over its context it answers 200 with an empty stream.
* ``llama.cpp`` (llama-server, ``common_chat_msgs_parse_oaicompat``): every message needs
  ``content`` (string, array or null) or ``tool_calls``; ``name``, ``tool_call_id`` and a
  call's ``id`` are read into strings (null: HTTP 500 type_error.302); a call's arguments
  are parsed as JSON (HTTP 500 "Failed to parse tool call arguments as JSON"); a string
  ``tool_choice`` other than auto/none/required is refused (an object is taken as auto).
  Over its context: HTTP 400 ``exceed_context_size_error``.
* ``openai``: an empty ``tool_calls`` list is refused ("[] is too short"), and so is a
  ``tool_choice`` without ``tools``.
* ``vllm`` started as its docs say for tools (``--enable-auto-tool-choice
  --tool-call-parser …``): takes every ``tool_choice``. ``vllm-plain``, started without
  them: its request model reads tools without ``tool_choice`` as ``"auto"``
  (``check_tool_usage``), and ``"auto"`` is refused with HTTP 400 — offered tools are
  refused either way; a named function is still taken (guided decoding).
"""

from __future__ import annotations

import json
from typing import Any

Refusal = tuple[int, dict[str, Any]]

LLAMA_CPP_OVERFLOW = "the request exceeds the available context size, try increasing it"
VLLM_AUTO = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


def judge(flavour: str, body: Any) -> Refusal | None:
    judges = {
        "llama-cpp-python": llama_cpp_python,
        "llama.cpp": llama_cpp,
        "openai": openai,
        "vllm": vllm,
        "vllm-plain": vllm_plain,
    }
    return judges[flavour](body)


def prompt_tokens(body: Any) -> int:
    """About four characters a token, as a stand-in for the server's tokenizer."""
    return len(json.dumps(body.get("messages", []))) // 4


# ── llama-cpp-python: pydantic over TypedDicts, errors as HTTP 500 ──────────────


def llama_cpp_python(body: Any) -> Refusal | None:
    errors: list[dict[str, Any]] = []

    def err(kind: str, loc: tuple, msg: str, value: Any) -> None:
        errors.append({"type": kind, "loc": ("body", *loc), "msg": msg, "input": value})

    def string(loc: tuple, holder: dict, key: str, *, required: bool = True, nullable: bool = False) -> None:
        if key not in holder:
            if required:
                err("missing", (*loc, key), "Field required", holder)
        elif (holder[key] is None and not nullable) or (holder[key] is not None and not isinstance(holder[key], str)):
            err("string_type", (*loc, key), "Input should be a valid string", holder[key])

    models = {
        "system": "ChatCompletionRequestSystemMessage",
        "user": "ChatCompletionRequestUserMessage",
        "assistant": "ChatCompletionRequestAssistantMessage",
        "tool": "ChatCompletionRequestToolMessage",
    }
    for i, message in enumerate(body.get("messages") or []):
        model = models.get(message.get("role"))
        if model is None:
            err(
                "literal_error",
                ("messages", i, "role"),
                "Input should be 'system', 'user', 'assistant' or 'tool'",
                message.get("role"),
            )
            continue
        loc = ("messages", i, model)
        if message["role"] == "assistant":
            string(loc, message, "content", required=False)
            for n, call in enumerate(message.get("tool_calls") or []):
                where = (*loc, "tool_calls", n)
                string(where, call, "id")
                if call.get("type") != "function":
                    err("literal_error", (*where, "type"), "Input should be 'function'", call.get("type"))
                function = call.get("function") if isinstance(call.get("function"), dict) else {}
                string((*where, "function"), function, "name")
                string((*where, "function"), function, "arguments")
        elif message["role"] == "tool":
            string(loc, message, "content", nullable=True)
            string(loc, message, "tool_call_id")
        elif message["role"] == "system":
            string(loc, message, "content", nullable=True)
        elif "content" not in message:
            err("missing", (*loc, "content"), "Field required", message)
    for n, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool.get("function"), dict) else {}
        string(("tools", n, "function"), function, "name")
        if not isinstance(function.get("parameters"), dict):
            err("missing", ("tools", n, "function", "parameters"), "Field required", function)
    choice = body.get("tool_choice")
    if (
        choice is not None
        and choice not in ("none", "auto", "required")
        and not (
            isinstance(choice, dict)
            and choice.get("type") == "function"
            and isinstance((choice.get("function") or {}).get("name"), str)
        )
    ):
        err("union_tag_invalid", ("tool_choice",), "Input should be 'none', 'auto' or 'required'", choice)
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        err("int_type", ("max_tokens",), "Input should be a valid integer", max_tokens)
    if not errors:
        return None
    text = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''}:\n" + "".join(f"  {e!r}\n" for e in errors)
    return 500, {"error": {"message": text, "type": "internal_server_error", "param": None, "code": None}}


# ── llama.cpp's llama-server: nlohmann::json, errors as 400/500 ─────────────────


def llama_cpp(body: Any) -> Refusal | None:
    for _i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        if "content" in message and content is not None and not isinstance(content, (str, list)):
            return _cpp(400, f"Invalid 'content' type: expected string or array, got {json.dumps(content)}")
        if "content" not in message and not message.get("tool_calls"):
            return _cpp(
                400,
                "Expected 'content' or 'tool_calls' (ref: https://github.com/ggml-org/llama.cpp/"
                "issues/8367 & https://github.com/ggml-org/llama.cpp/issues/12279)",
            )
        strings = [message.get(k, "") for k in ("name", "tool_call_id")]
        strings += [call.get("id", "") for call in message.get("tool_calls") or []]
        if any(not isinstance(s, str) for s in strings):
            return _cpp(500, "[json.exception.type_error.302] type must be string, but is null")
        for call in message.get("tool_calls") or []:
            try:
                json.loads(call["function"]["arguments"])
            except (ValueError, TypeError, KeyError):
                return _cpp(500, "Failed to parse tool call arguments as JSON")
    choice = body.get("tool_choice")
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return _cpp(400, f"Invalid tool_choice: {choice}")
    return None


def _cpp(status: int, message: str) -> Refusal:
    kind = "invalid_request_error" if status == 400 else "server_error"
    return status, {"error": {"code": status, "message": message, "type": kind}}


def llama_cpp_overflow() -> Refusal:
    return 400, {
        "error": {
            "code": 400,
            "message": LLAMA_CPP_OVERFLOW,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5000,
            "n_ctx": 4096,
        }
    }


# ── hosted APIs ──────────────────────────────────────────────────────────────────


def openai(body: Any) -> Refusal | None:
    for i, message in enumerate(body.get("messages") or []):
        if message.get("tool_calls") == []:
            return 400, {
                "error": {
                    "message": f"[] is too short - 'messages.{i}.tool_calls'",
                    "type": "invalid_request_error",
                    "param": f"messages.[{i}].tool_calls",
                }
            }
    if "tool_choice" in body and not body.get("tools"):
        return 400, {
            "error": {
                "message": "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
                "type": "invalid_request_error",
            }
        }
    return None


def vllm(body: Any) -> Refusal | None:
    return None


def vllm_plain(body: Any) -> Refusal | None:
    if body.get("tools") and body.get("tool_choice", "auto") == "auto":
        return 400, {"object": "error", "message": VLLM_AUTO, "type": "BadRequestError", "code": 400}
    return None
