"""Request bodies, validated strictly: unknown fields, wrong types and out-of-range
values are refused (400) before anything changes. They also give the OpenAPI document
its schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from kbdesk.filter_fields import FIELDS, FilterField
from kbdesk.search import MAX_LIMIT


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class KbCreate(Body):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=10_000)
    scope: Literal["personal", "team", "global"] = "personal"
    team_id: str | None = Field(None, max_length=64)
    keyword_only: bool = Field(False, description="No embeddings: keyword search only (kbdesk's addition).")
    chunk_size: int | None = Field(None, ge=1, le=1_000_000)
    chunk_overlap: int | None = Field(None, ge=0, le=1_000_000)


class KbUpdate(Body):
    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Field(None, max_length=10_000)


class Discoverable(Body):
    discoverable: bool


Globs = str | list[str]


def _filter_field(spec: FilterField) -> tuple[Any, Any]:
    """A filter field of the search body, from its declaration (:mod:`kbdesk.filter_fields`)."""
    kind: Any = Globs if spec.many else Literal[spec.choices] if spec.choices else str
    examples = [spec.example] if spec.example is not None else None
    return kind | None, Field(None, description=spec.help, examples=examples)


if TYPE_CHECKING:

    class SearchFilters(Body):
        """Made from the declared filter fields at run time (below)."""

else:
    SearchFilters = create_model(
        "SearchFilters",
        __base__=Body,
        __doc__="Which documents a search may return (kbdesk's addition). Fields combine with AND; each left out "
        "narrows nothing. A bad value is a 400 naming the field.",
        **{spec.key: _filter_field(spec) for spec in FIELDS},
    )


class SearchRequest(Body):
    query: str = Field(min_length=1, max_length=2_000)
    limit: int = Field(5, ge=1, le=MAX_LIMIT)
    threshold: float | None = Field(
        None,
        ge=-1.0,
        le=1.0,
        description="Vector mode: minimum cosine; hybrid: floor on the fused score "
        "(default 0.3). Not allowed in keyword mode.",
    )
    mode: Literal["auto", "vector", "keyword", "hybrid"] | None = Field(
        None, description="kbdesk's addition: how to rank (default: the server's configured mode)."
    )
    filters: SearchFilters | None = Field(
        None,
        description="kbdesk's addition: search only documents matching these (applied before ranking: the best "
        "`limit` results inside the filter come back).",
    )


class ChannelFilters(Body):
    filters: SearchFilters | None = Field(
        description="The conversation's default filters (as a search body's filters): every search of its turns "
        "keeps to them, a turn's or a model's own filters lying over them. null: none of its own (its persona's "
        "apply, if any).",
        examples=[{"path": "projects/atlas/**", "tags": ["q3"]}],
    )


class ChannelKbs(Body):
    kb_ids: list[str] = Field(max_length=500)
