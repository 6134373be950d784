"""The last check before vectors reach a store: every vector usable, one per input.

Any provider can hand back an :class:`EmbedResult` (the HTTP client, the in-process
one, one registered by a program). :func:`check_result` looks at it the way the HTTP
client looks at a server's answer: a vector that is unusable by itself (NaN or
infinity, all zeros, not numbers, a length other than the knowledge base's) becomes a
per-input failure naming the provider, the model and what is wrong, so that it never
reaches the store and the other inputs are kept.
"""

from __future__ import annotations

from typing import Literal

from kbdesk.providers.errors import InvalidVectorError, ProviderResponseError, who
from kbdesk.providers.results import EmbedResult, InputFailure
from kbdesk.providers.validate import vector_problem

OnInputError = Literal["raise", "collect"]


def check_result(
    result: EmbedResult,
    n_inputs: int,
    *,
    provider: str,
    model: str,
    dimensions: int | None = None,
    on_input_error: OnInputError = "raise",
) -> EmbedResult:
    """``result`` with its unusable vectors turned into failures (``None`` in ``vectors``).

    ``dimensions`` is the length every vector must have (a knowledge base's recorded
    dimension); without it, the first usable vector sets it. With ``on_input_error=
    "raise"`` the first new failure is raised instead. A result that does not hold one
    vector per input cannot be matched to its inputs: :class:`ProviderResponseError`.
    """
    if len(result.vectors) != n_inputs:
        raise ProviderResponseError(
            f"{who(provider, model)}: response had {len(result.vectors)} vectors for {n_inputs} inputs",
            provider=provider,
            model=model,
        )
    failed = {failure.index for failure in result.failures}
    vectors = list(result.vectors)
    failures = list(result.failures)
    expect = dimensions
    for index, vector in enumerate(vectors):
        if vector is None and index in failed:
            continue
        array, problem = (None, "is missing") if vector is None else vector_problem(vector, expect)
        if array is not None:
            expect = expect or array.size
            continue
        error = InvalidVectorError(
            f"{who(provider, model)}: the vector for input {index} {problem}",
            index=index,
            provider=provider,
            model=model,
        )
        if on_input_error == "raise":
            raise error
        vectors[index] = None
        failures.append(InputFailure(index, error))
    if len(failures) == len(result.failures):
        return result
    failures.sort(key=lambda failure: failure.index)
    return EmbedResult(vectors, result.prompt_tokens, result.total_tokens, result.calls, failures)


__all__ = ["check_result"]
