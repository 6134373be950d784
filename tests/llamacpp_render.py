"""What the model reads: a chat request rendered through llama-cpp-python's own
``chatml-function-calling`` handler (``llama_cpp.llama_chat_format.chatml_function_calling``),
stopped at the point where it would start generating. The handler picks the template
branch from ``tool_choice`` the way the server does (a missing one renders no tools)."""

from __future__ import annotations

import html
import json
from typing import Any


class _Rendered(Exception):
    def __init__(self, prompt: str) -> None:
        super().__init__(prompt)
        self.prompt = prompt


class _Llama:
    """Stands in for the model: the handler's first completion call is where the prompt is whole."""

    verbose = False

    def create_completion(self, prompt: str, **_: Any) -> Any:
        raise _Rendered(prompt)


def rendered_prompt(request: dict[str, Any]) -> str:
    from llama_cpp.llama_chat_format import chatml_function_calling

    try:
        chatml_function_calling(
            llama=_Llama(),
            messages=request["messages"],
            tools=request.get("tools"),
            tool_choice=request.get("tool_choice"),
            stream=bool(request.get("stream")),
            max_tokens=request.get("max_tokens"),
        )
    except _Rendered as done:
        return done.prompt
    except Exception as exc:  # noqa: BLE001 - the server fails the same way ("required" asserts)
        return f"(the server's handler fails on this request before the model reads anything: {exc!r})"
    raise AssertionError("the handler answered without rendering a prompt")


def holds(prompt: str, passage: str) -> bool:
    """Whether ``passage`` is in ``prompt`` as the model reads it: the template escapes HTML
    (&, <, >, quotes), and kbdesk's fenced data is JSON (newlines and quotes escaped)."""
    text = html.unescape(prompt)
    return passage in text or json.dumps(passage, ensure_ascii=False)[1:-1] in text
