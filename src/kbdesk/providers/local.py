"""An in-process embedding provider: sentence-transformers on this machine.

Needs the optional extra (``pip install 'kbdesk[local]'``); kbdesk works fully
without it. The model is a KB's ``model_id``: a local directory holding a
sentence-transformers model, or a model name already in the Hugging Face cache (set
``HF_HUB_OFFLINE=1`` to make sure nothing is fetched). Vectors come back unit-normalised.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Literal

from kbdesk.cpu_threads import torch_threads_for
from kbdesk.providers.errors import ProviderConfigError, ProviderNotFoundError
from kbdesk.providers.faults import check_result
from kbdesk.providers.results import EmbedResult, ModelInfo
from kbdesk.providers.settings import ProviderSettings

UsageCallback = Any


class LocalProvider:
    """Same interface as :class:`OpenAICompatProvider` for embeddings and model listing."""

    def __init__(self, name: str, settings: ProviderSettings, *, on_usage: UsageCallback | None = None) -> None:
        self.name = name
        self.settings = settings
        self.on_usage = on_usage
        self._models: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalProvider(name={self.name!r})"

    def close(self) -> None:
        with self._lock:
            self._models.clear()

    def __enter__(self) -> LocalProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _model(self, model: str) -> Any:
        with self._lock:
            if model not in self._models:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise ProviderConfigError(
                        f"provider '{self.name}' is local and needs sentence-transformers: pip install 'kbdesk[local]'",
                        provider=self.name,
                    ) from None
                try:
                    self._models[model] = SentenceTransformer(os.path.expanduser(model), device="cpu")
                except Exception as exc:  # noqa: BLE001 - OSError, ValueError, hub errors: all "cannot load"
                    raise ProviderNotFoundError(
                        f"provider '{self.name}': cannot load model '{model}' (a local model directory, or a "
                        f"name already downloaded): {type(exc).__name__}",
                        provider=self.name,
                        model=model,
                    ) from None
            return self._models[model]

    def embed(
        self,
        texts: Sequence[str],
        model: str,
        *,
        dimensions: int | None = None,
        expect_dimensions: int | None = None,
        on_input_error: str = "raise",
    ) -> EmbedResult:
        encoder = self._model(model)
        # one encode at a time: torch's threads are sized per call (a query on one thread)
        with self._lock, torch_threads_for(len(texts)):
            matrix = encoder.encode(
                list(texts),
                batch_size=min(self.settings.batch_size, 64),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        vectors = matrix.astype("float32").tolist()
        if self.on_usage:
            self.on_usage(
                {
                    "role": "embedding",
                    "provider": self.name,
                    "model": model,
                    "inputs": len(texts),
                    "prompt_tokens": None,
                    "total_tokens": None,
                }
            )
        mode: Literal["raise", "collect"] = "collect" if on_input_error == "collect" else "raise"
        return check_result(
            EmbedResult(vectors=vectors, calls=1),
            len(vectors),
            provider=self.name,
            model=model,
            dimensions=expect_dimensions,
            on_input_error=mode,
        )

    def list_models(self) -> list[ModelInfo]:
        """Models already loaded in this process (a local provider has no catalogue)."""
        return [ModelInfo(model_id, "embedding") for model_id in self._models]
