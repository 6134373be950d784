"""What kind of model an id is, for people choosing one: the server's word, else its name.

Servers that say (LM Studio's ``type``, vLLM's task) give ``ModelInfo.model_type``; most
OpenAI-compatible listings (Ollama's ``/v1/models``, llama.cpp) say nothing. Then the id
often does: ``nomic-embed-text``, ``bge-small-en``, ``all-MiniLM-L6-v2`` are embedding
models. A guess is labelled as one, never shown as the server's answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbdesk.providers.results import _EMBEDDING_NAME_HINTS, ModelInfo  # one list of name hints, shared


@dataclass(frozen=True)
class ModelKind:
    kind: str
    """"embedding" or "chat"."""
    said_by_server: bool
    """False: guessed from the id."""

    @property
    def label(self) -> str:
        return self.kind if self.said_by_server else f"{self.kind}? (by its name)"


def model_kind(model: ModelInfo) -> ModelKind:
    if model.model_type in ("embedding", "chat"):
        return ModelKind(model.model_type, True)
    name = model.id.lower()
    return ModelKind("embedding" if any(hint in name for hint in _EMBEDDING_NAME_HINTS) else "chat", False)
