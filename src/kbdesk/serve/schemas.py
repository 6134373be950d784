"""Request bodies, validated strictly: unknown fields, wrong types and out-of-range
values are refused (400) before anything changes. They also give the OpenAPI document
its schemas."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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


class SearchFilters(Body):
    """Which documents a search may return (kbdesk's addition). Fields combine with AND;
    each left out narrows nothing. A bad value is a 400 naming the field."""

    path: Globs | None = Field(
        None,
        description="Glob(s) the document's path (relative to the folder it was added from) must match one of: "
        "'projects/**' (any depth), 'work/*' (one level), '*.md'.",
        examples=["projects/**"],
    )
    exclude: Globs | None = Field(None, description="Glob(s) of document paths to leave out.")
    type: Globs | None = Field(
        None, description="File types, one of which must match: 'pdf,md' or ['pdf', 'md'].", examples=["pdf,md"]
    )
    since: str | None = Field(
        None,
        description="Only documents dated at or after this ISO-8601 day or time (2026-11-01, 2026-11-01T09:30Z).",
        examples=["2026-11-01"],
    )
    until: str | None = Field(
        None, description="Only documents dated before the end of this day (or before this time)."
    )
    date: Literal["modified", "indexed", "document"] | None = Field(
        None,
        description="What since/until compare: the file's modified time (default), when it was indexed, or "
        "the date the document gives itself (Markdown front matter date: or created:, an e-mail's Date:, the "
        "created date of an Office, OpenDocument or EPUB file; a document without one that parses is left out).",
    )
    tags: Globs | None = Field(
        None,
        description="Tags a document must carry all of (front matter tags: and inline #tags; any case, no '#'; "
        "a nested tag 'work/infra' also counts as 'work').",
        examples=[["q3"]],
    )
    any_tags: Globs | None = Field(None, description="Tags a document must carry at least one of.")


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
