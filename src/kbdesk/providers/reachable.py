"""Whether anything listens at a provider's URL: a TCP connection, nothing sent.

``kbdesk provider add`` uses it when a kind's default base URL was taken: a local
server that listens elsewhere (llama-cpp-python on 8000 registered as llama.cpp's
``llamacpp`` kind, whose default is 8080) is said at once, not discovered by the first
question.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from kbdesk.providers.settings import DEFAULT_BASE_URLS

LOCAL_KINDS = ("ollama", "llamacpp", "lmstudio", "vllm")
"""Kinds whose default base URL is a server on this machine."""


def listening(url: str, timeout: float = 1.0) -> bool:
    """True when a TCP connection to ``url``'s host and port is accepted within ``timeout``."""
    parts = urlsplit(url)
    if not parts.hostname:
        return False
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def default_url_note(kind: str, timeout: float = 1.0) -> str | None:
    """One line when ``kind``'s default local URL answers nothing (naming the other local
    servers' default ports that do answer); None when it answers or is not local."""
    if kind not in LOCAL_KINDS:
        return None
    url = DEFAULT_BASE_URLS[kind]
    if listening(url, timeout):
        return None
    others = [
        f"{DEFAULT_BASE_URLS[k]} (the {k} kind's)"
        for k in LOCAL_KINDS
        if k != kind and DEFAULT_BASE_URLS[k] != url and listening(DEFAULT_BASE_URLS[k], timeout)
    ]
    note = f"nothing answers at {url} (the {kind} kind's default)"
    if others:
        note += f"; something answers at {', '.join(others)}"
    note += ": if your server listens elsewhere, add it again with --base-url URL"
    if kind == "llamacpp":  # the kind is llama.cpp's llama-server; llama-cpp-python is another server
        note += " (llama-cpp-python's server is --kind custom --base-url http://127.0.0.1:8000/v1)"
    return note


__all__ = ["LOCAL_KINDS", "default_url_note", "listening"]
