"""What the server answers, as types: each route declares its body and the errors it may
send, so the OpenAPI document says exactly what a client gets (and FastAPI shapes each
answer by its model: a field not declared here is never sent)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from kbdesk.serve.errors import CODES

Scope = Literal["personal", "team", "global"]
DocStatus = Literal["pending", "extracting", "chunking", "embedding", "ready", "error"]


class ErrorBody(BaseModel):
    """Every refusal: a code and one line saying why."""

    error: str = Field(description="A code for the status: " + ", ".join(sorted(set(CODES.values()))) + ".")
    message: str = Field(description="One line, for a person.")


class KnowledgeBase(BaseModel):
    id: str
    name: str
    description: str
    scope: Scope
    owner_id: str | None
    team_id: str | None
    embedding_config: dict[str, Any] = Field(
        description="provider, model_id, dimensions (when known), chunk_size, chunk_overlap"
    )
    document_count: int
    chunk_count: int
    total_bytes: int
    status: Literal["active", "processing", "error"]
    created_at: str | None
    updated_at: str | None


class KnowledgeBases(BaseModel):
    data: list[KnowledgeBase]
    total: int


class Document(BaseModel):
    id: str
    kb_id: str
    filename: str
    content_type: str
    size_bytes: int
    chunk_count: int
    status: DocStatus
    error: str | None
    uploaded_by: str | None
    created_at: str | None
    updated_at: str | None
    indexed_at: str | None = Field(description="When the chunks searched now were indexed (kbdesk's addition).")
    stale: bool = Field(
        description="The chunks come from an older version while a newer one is indexed or failed (kbdesk's addition)."
    )


class Upload(Document):
    """The document an upload made or changed, as it was when the server accepted it."""

    result: Literal["queued", "unchanged", "known_error", "failed"] = Field(
        description="queued: a new document or version is being indexed (status pending; poll its status); "
        "unchanged: these bytes are indexed already; known_error: these bytes failed before for a reason of "
        "their own (error says why); failed: the file was recorded with an error (error says why)."
    )


class Documents(BaseModel):
    data: list[Document]
    total: int


class DocumentStatus(BaseModel):
    id: str
    status: DocStatus
    chunk_count: int
    error: str | None
    filename: str


class Deleted(BaseModel):
    deleted: Literal[True]


class Result(BaseModel):
    content: str
    source: str = Field(description="The document's file name.")
    kb: str = Field(description="The knowledge base's name.")
    similarity: float
    metadata: dict[str, Any]


class SearchAnswer(BaseModel):
    data: list[Result]
    query: str
    total: int
    mode: str = Field(description="How the results were ranked: vector, keyword or hybrid.")
    keyword_fallback: list[str] | None = Field(
        None, description="The KBs searched by keyword alone because their embedding provider failed."
    )
    notice: str | None = Field(None, description="One line about that fallback, for a person.")
    notes: list[str] | None = Field(None, description="Why the answer is not what was asked (say, keyword only).")
    filters: dict[str, Any] | None = Field(
        None, description="The filters applied (their JSON form, as the request's filters), when any."
    )


class RebuildStarted(BaseModel):
    message: Literal["rebuild started"]
    total_docs: int
    rebuilding: int
    skipped: int


class DiscoverableState(BaseModel):
    id: str
    discoverable: bool


class ChannelKb(BaseModel):
    kb_id: str
    kb_name: str
    enabled: bool
    document_count: int
    origin: Literal["persona", "project", "conversation", "personal"] | None = Field(
        description="Why the KB is on (null: it is off)."
    )
    locked: bool = Field(description="It comes from the persona or project, and is changed there.")


class ChannelFiltersAnswer(BaseModel):
    filters: dict[str, Any] | None = Field(
        description="The conversation's own default filters (their JSON form, as a search body's); null: none."
    )
    effective: dict[str, Any] = Field(
        description="What its searches keep to now: its own filters, else its persona's ({}: nothing narrowed)."
    )
    origin: Literal["conversation", "persona"] | None = Field(description="Whose filters are in effect (null: none).")
    line: str = Field(description="The filters in effect as one line of the filter language (tag:q3 path:work/**).")


class ChannelKbs(BaseModel):
    data: list[ChannelKb]


WHY = {
    400: "The request is malformed (bad JSON, a wrong type, an unknown field, a value out of range).",
    401: "No token, or one that is not valid (unknown, revoked, or its user is gone).",
    403: "The token lacks the permission, or the user's scope does not allow the change.",
    404: "No such thing, or one this user cannot see (the same answer either way).",
    409: "The name is taken.",
    412: "No configured provider serves the KB's embedding model.",
    413: "The body is over its limit.",
    415: "kbdesk cannot read that file type.",
    501: "This database keeps no conversations.",
    502: "The embedding provider failed on a vector-only search.",
    503: "The database is unavailable, the server is stopping, or too many uploads are waiting (Retry-After).",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route: these errors (and the 400, 401 and 503 every route
    may answer), each in the one error shape."""
    chosen = sorted({400, 401, 503, *statuses})
    return {status: {"model": ErrorBody, "description": WHY[status]} for status in chosen}
