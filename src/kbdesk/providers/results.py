"""What a provider hands back: embedding results and model listings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kbdesk.providers.errors import ProviderError


@dataclass(frozen=True)
class InputFailure:
    """One input that could not be embedded, and why (the others were)."""

    index: int
    """Position of the input in the list given to ``embed``."""
    error: ProviderError
    """InputTooLargeError, EmptyInputError or InvalidVectorError (an unusable vector, or a
    malformed answer even when the input was sent alone); its message names provider and model."""


@dataclass
class EmbedResult:
    vectors: list[list[float] | None]
    """One vector per input, in input order; None only for a failed input (collect mode)."""
    prompt_tokens: int | None = None
    """Tokens the server reported over all calls, or None when it reported none."""
    total_tokens: int | None = None
    """The server's total_tokens over all calls, or None when it reported none."""
    calls: int = 0
    """HTTP requests made, retries and split batches included."""
    failures: list[InputFailure] = field(default_factory=list)
    """Inputs that failed alone (only filled when on_input_error="collect")."""

    @property
    def dimensions(self) -> int | None:
        """Length of the vectors, or None when there are none."""
        return next((len(v) for v in self.vectors if v is not None), None)


@dataclass(frozen=True)
class ModelInfo:
    id: str
    """The model id to pass as ``model``."""
    model_type: str | None = None
    """"embedding", "chat", or None when the server does not say."""


_EMBEDDING_TYPES = {"embedding", "embeddings", "embed", "text-embedding", "text_embedding", "feature-extraction"}
_CHAT_TYPES = {
    "llm",
    "chat",
    "vlm",
    "completion",
    "completions",
    "chat.completion",
    "text-generation",
    "text_generation",
    "generate",
    "instruct",
}
_EMBEDDING_NAME_HINTS = ("embed", "bge-", "bge_", "e5-", "gte-", "minilm", "mpnet", "nomic-", "arctic-embed")


def normalise_model_type(raw: object) -> str | None:
    """Map a server's type hint to "embedding", "chat" or None (unknown)."""
    if not isinstance(raw, str):
        return None
    value = raw.strip().lower()
    if value in _EMBEDDING_TYPES:
        return "embedding"
    if value in _CHAT_TYPES:
        return "chat"
    return None


def embedding_candidates(models: Iterable[ModelInfo]) -> list[ModelInfo]:
    """Models to offer for the embedding role, with seed 000 §0's tolerant filter.

    A model counts when the server says it is an embedding model OR says nothing at
    all (many servers never report a type). Typed embedding models come first, then
    untyped ones whose id looks like an embedding model, then the other untyped ones;
    the server's order is kept within each group. The UI must still allow typing an id.
    """
    ranked: list[tuple[int, int, ModelInfo]] = []
    for position, model in enumerate(models):
        if model.model_type == "embedding":
            rank = 0
        elif model.model_type is None:
            rank = 1 if any(h in model.id.lower() for h in _EMBEDDING_NAME_HINTS) else 2
        else:
            continue
        ranked.append((rank, position, model))
    return [model for _, _, model in sorted(ranked, key=lambda item: item[:2])]
