"""One client for every OpenAI-compatible server: embeddings and model listing.

OpenAI, Ollama, LM Studio, llama.cpp's server, vLLM and OpenRouter all speak the same
``/v1/embeddings`` and ``/v1/models`` dialect, with small differences smoothed over
here. ``transport.py`` sends requests and decides what to retry; ``validate.py`` checks
the shapes that come back. On top of those, this module batches inputs and keeps a
fault local to the inputs it belongs to:

* a batch the server finds too large (413, or a 400/500 saying so) is split in halves;
  an input too long on its own fails alone;
* a malformed answer (not JSON, too few or too many vectors, bad indices, vectors of
  different lengths) is split in halves the same way, down to single inputs at most
  log2(n) levels deep; an input whose answer is malformed when sent alone fails alone;
* a vector that is unusable by itself (NaN or infinity, all zeros, not numbers, a
  dimension other than the expected one) fails its input at once, without another call;
* an empty input fails alone and is never sent.

Every split is a real request and is counted in ``EmbedResult.calls``.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Literal

import httpx

from kbdesk.providers.errors import (
    EmptyInputError,
    InputTooLargeError,
    InvalidVectorError,
    MalformedResponseError,
    ProviderNotFoundError,
    ProviderResponseError,
)
from kbdesk.providers.results import EmbedResult, InputFailure, ModelInfo
from kbdesk.providers.secrets import Redactor
from kbdesk.providers.settings import ProviderSettings, base_url_for, display_url
from kbdesk.providers.transport import TooLarge, Transport, who
from kbdesk.providers.validate import (
    ParsedEmbeddings,
    ShapeError,
    error_message_from,
    parse_embeddings,
    parse_models,
    says_model_missing,
    says_too_large,
)

log = logging.getLogger("kbdesk.providers")

UsageCallback = Callable[[dict[str, Any]], None]
OnInputError = Literal["raise", "collect"]


def plan_batches(texts: Sequence[str], batch_size: int, max_chars: int) -> list[list[int]]:
    """Split input positions into consecutive batches of at most ``batch_size`` inputs
    and ``max_chars`` characters (an input longer than that goes in a batch of its own)."""
    batches: list[list[int]] = []
    current: list[int] = []
    chars = 0
    for index, text in enumerate(texts):
        if current and (len(current) >= batch_size or chars + len(text) > max_chars):
            batches.append(current)
            current, chars = [], 0
        current.append(index)
        chars += len(text)
    if current:
        batches.append(current)
    return batches


@dataclass
class _Run:
    """The state of one ``embed`` call (the provider itself keeps none, so threads may share it)."""

    texts: list[str]
    model: str
    dimensions: int | None
    """Sent to the server as ``dimensions`` (and checked)."""
    expect: int | None
    """The length every vector must have: ``dimensions``, the caller's, or the first batch's."""
    mode: OnInputError
    vectors: list[list[float] | None]
    failures: list[InputFailure] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int | None = None
    total_tokens: int | None = None


class OpenAICompatProvider:
    """Embeddings and model listing from one configured OpenAI-compatible server.

    ``client`` may be shared (it is then not closed by :meth:`close`); ``sleep`` and
    ``clock`` are injectable so tests can record waits instead of waiting.
    """

    def __init__(
        self,
        name: str,
        settings: ProviderSettings,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        on_usage: UsageCallback | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.base_url = base_url_for(settings, name)
        self.on_usage = on_usage
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(headers={"User-Agent": "kbdesk"})
        self._transport = Transport(
            name, settings, self.base_url, self._client, sleep=sleep, clock=clock, rng=rng or random.Random()
        )

    def __repr__(self) -> str:
        return (
            f"OpenAICompatProvider(name={self.name!r}, kind={self.settings.kind!r}, "
            f"base_url={display_url(self.base_url)!r})"
        )

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAICompatProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── public API ────────────────────────────────────────────────────────────────
    def embed(
        self,
        texts: Sequence[str],
        model: str,
        *,
        dimensions: int | None = None,
        expect_dimensions: int | None = None,
        on_input_error: OnInputError = "raise",
    ) -> EmbedResult:
        """Embed ``texts`` with ``model``; one vector per input, in input order.

        ``dimensions`` asks the server for shorter vectors (OpenAI's ``dimensions``
        field; not every model or server accepts it). ``expect_dimensions`` only checks
        the length (a KB's fixed dimension) without sending anything. Either way, and
        across batches, every vector must have the same length.

        An input that cannot be embedded on its own (too long for the model, empty,
        given an unusable vector, or a malformed answer even when sent alone) raises its
        error with ``on_input_error="raise"`` (the default). With ``"collect"`` every
        other input is still embedded, the failed ones get ``None`` in ``vectors`` and an
        :class:`InputFailure` in ``failures``. Errors that concern the whole call (auth,
        model, server down, base64 or per-token vectors) always raise.
        """
        if on_input_error not in ("raise", "collect"):
            raise ValueError(f"on_input_error must be 'raise' or 'collect', got {on_input_error!r}")
        items = [texts] if isinstance(texts, str) else list(texts)
        if isinstance(texts, str) or not all(isinstance(t, str) for t in items):
            raise TypeError("texts must be a list of strings")
        if dimensions is not None and expect_dimensions is not None and dimensions != expect_dimensions:
            raise ValueError(f"dimensions={dimensions} contradicts expect_dimensions={expect_dimensions}")
        run = _Run(items, model, dimensions, dimensions or expect_dimensions, on_input_error, [None] * len(items))
        todo = []
        for index, text in enumerate(run.texts):
            if text.strip():
                todo.append(index)
            else:
                self._fail(
                    run,
                    EmptyInputError(
                        f"{self._who(model)}: input {index} is empty", index=index, provider=self.name, model=model
                    ),
                )
        for batch in plan_batches(
            [run.texts[i] for i in todo], self.settings.batch_size, self.settings.max_batch_chars
        ):
            self._embed_batch([todo[j] for j in batch], run)
        run.failures.sort(key=lambda failure: failure.index)
        return EmbedResult(run.vectors, run.prompt_tokens, run.total_tokens, run.calls, run.failures)

    def list_models(self) -> list[ModelInfo]:
        """The server's models (``GET /models``), with a type when the server gives one."""
        body = self._transport.send("GET", "/models", None, None, SimpleNamespace(calls=0))
        self._check_error_body(body, None)
        try:
            return parse_models(body)
        except ShapeError as exc:
            raise ProviderResponseError(f"{self._who(None)}: {exc}", provider=self.name) from None

    # ── embedding ─────────────────────────────────────────────────────────────────
    def _embed_batch(self, indices: list[int], run: _Run) -> None:
        try:
            parsed = self._post_embeddings([run.texts[i] for i in indices], run)
        except MalformedResponseError as exc:
            if len(indices) > 1:
                log.info("%s; sending its %d inputs again in two halves", exc, len(indices))
                self._split(indices, run)
                return
            index = indices[0]
            self._fail(
                run,
                InvalidVectorError(
                    f"{self._who(run.model)}: input {index} failed alone: {exc.detail}",
                    index=index,
                    provider=self.name,
                    model=run.model,
                    status=exc.status,
                ),
            )
            return
        except TooLarge as exc:
            if len(indices) > 1:
                log.info(
                    "provider %s: the server rejected %d inputs as too large; splitting the batch",
                    self.name,
                    len(indices),
                )
                self._split(indices, run)
                return
            index, chars = indices[0], len(run.texts[indices[0]])
            self._fail(
                run,
                InputTooLargeError(
                    f"{self._who(run.model)}: input {index} ({chars} characters) is too long for the model: "
                    f"{exc.message}",
                    index=index,
                    chars=chars,
                    provider=self.name,
                    model=run.model,
                    status=exc.status,
                ),
            )
            return
        for position, index in enumerate(indices):
            if position in parsed.bad:
                self._fail(
                    run,
                    InvalidVectorError(
                        f"{self._who(run.model)}: the vector for input {index} {parsed.bad[position]}",
                        index=index,
                        provider=self.name,
                        model=run.model,
                    ),
                )
            else:
                run.vectors[index] = parsed.vectors[position]

    def _split(self, indices: list[int], run: _Run) -> None:
        """The two halves of a batch, one after the other (each halving is one level: a
        batch of n inputs reaches single inputs after at most log2(n) levels)."""
        half = len(indices) // 2
        self._embed_batch(indices[:half], run)
        self._embed_batch(indices[half:], run)

    def _post_embeddings(self, batch: list[str], run: _Run) -> ParsedEmbeddings:
        payload: dict[str, Any] = {"model": run.model, "input": batch, "encoding_format": "float"}
        if run.dimensions is not None:
            payload["dimensions"] = run.dimensions
        log.debug(
            "provider %s: embedding %d inputs (%d characters) with %s",
            self.name,
            len(batch),
            sum(map(len, batch)),
            run.model,
        )
        body = self._transport.send("POST", "/embeddings", run.model, payload, run)
        self._check_error_body(body, run.model)
        try:
            parsed = parse_embeddings(body, len(batch), run.expect)
        except ShapeError as exc:
            if exc.splittable:
                raise MalformedResponseError(
                    f"{self._who(run.model)}: {exc}", detail=str(exc), provider=self.name, model=run.model
                ) from None
            raise ProviderResponseError(f"{self._who(run.model)}: {exc}", provider=self.name, model=run.model) from None
        run.expect = run.expect or parsed.dimensions
        if parsed.prompt_tokens is not None:
            run.prompt_tokens = (run.prompt_tokens or 0) + parsed.prompt_tokens
        if parsed.total_tokens is not None:
            run.total_tokens = (run.total_tokens or 0) + parsed.total_tokens
        if self.on_usage is not None:
            self.on_usage(
                {
                    "role": "embedding",
                    "provider": self.name,
                    "model": run.model,
                    "inputs": len(batch),
                    "prompt_tokens": parsed.prompt_tokens,
                    "total_tokens": parsed.total_tokens,
                }
            )
        return parsed

    def _check_error_body(self, body: object, model: str | None) -> None:
        """Some servers answer 200 with an ``{"error": ...}`` object: judge it as a 400."""
        if not (isinstance(body, dict) and "error" in body and "data" not in body):
            return
        message = error_message_from(body, clean=Redactor.for_settings(self.settings))
        if model is not None and says_too_large(400, message):
            raise TooLarge(200, message)
        if model is not None and says_model_missing(message):
            raise ProviderNotFoundError(
                f"{self._who(model)}: model not found: {message}", provider=self.name, model=model, status=200
            )
        raise ProviderResponseError(
            f"{self._who(model)}: the server answered with an error: {message}",
            provider=self.name,
            model=model,
            status=200,
        )

    @staticmethod
    def _fail(run: _Run, error: EmptyInputError | InputTooLargeError | InvalidVectorError) -> None:
        if run.mode == "raise":
            raise error
        log.warning("%s", error)
        run.failures.append(InputFailure(error.index, error))

    def _who(self, model: str | None) -> str:
        return who(self.name, model)


__all__ = ["OpenAICompatProvider", "UsageCallback", "plan_batches"]
