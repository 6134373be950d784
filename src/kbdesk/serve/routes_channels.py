"""A channel's knowledge bases and default filters: a channel is a kbdesk conversation.

Each row says whether the KB is on in that conversation and why (``origin``: its
persona, its project, the conversation itself, or a personal KB on by default);
``locked`` rows come from the persona or project and are changed there. Its default
filters (the search body's ``filters``) keep every search of its turns to some documents;
without its own, its persona's apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends

from kbdesk.errors import NotFoundError
from kbdesk.filters import Filters
from kbdesk.filters_text import format_line
from kbdesk.serve.auth import WRITES, Caller, caller, is_uuid
from kbdesk.serve.errors import ApiError
from kbdesk.serve.responses import ChannelFiltersAnswer, errors
from kbdesk.serve.responses import ChannelKbs as ChannelKbsAnswer
from kbdesk.serve.schemas import ChannelFilters, ChannelKbs
from kbdesk.store.api import CHAT

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

router = APIRouter(tags=["channels"])


def _chat(who: Caller, channel_id: str) -> tuple[Any, Any]:
    if CHAT not in who.desk.capabilities:
        raise ApiError(501, "this database keeps its own channels table, so kbdesk keeps no conversations in it")
    chat = who.desk.chat()
    missing = ApiError(404, f"no channel {channel_id!r}")
    if not is_uuid(channel_id):
        raise missing
    try:
        conv = chat.conversation(channel_id)
    except NotFoundError:
        raise missing from None
    if conv.id.lower() != channel_id.lower():
        raise missing
    return chat, conv


def _rows(toggles: list[Any]) -> dict[str, Any]:
    return {
        "data": [
            {
                "kb_id": t.kb_id,
                "kb_name": t.name,
                "enabled": t.enabled,
                "document_count": t.document_count,
                "origin": t.origin,
                "locked": t.locked,
            }
            for t in toggles
        ]
    }


@router.get(
    "/channels/{channel_id}/knowledge-bases",
    summary="The knowledge bases of a conversation",
    response_model=ChannelKbsAnswer,
    responses=errors(404, 501),
)
def channel_kbs(channel_id: str, who: Caller = Depends(caller)) -> dict[str, Any]:
    chat, conv = _chat(who, channel_id)
    return _rows(chat.kb_toggles(conv.id))


@router.put(
    "/channels/{channel_id}/knowledge-bases",
    summary="Exactly these knowledge bases on in a conversation, the others off (needs kb.write)",
    response_model=ChannelKbsAnswer,
    responses=errors(403, 404, 413, 501),
)
def set_channel_kbs(channel_id: str, body: ChannelKbs, who: Caller = WRITES) -> dict[str, Any]:
    chat, conv = _chat(who, channel_id)
    kb_ids = [who.kb(kb_id).id for kb_id in dict.fromkeys(body.kb_ids)]  # every one reachable by this user
    return _rows(chat.set_kbs(conv.id, kb_ids))


def _filters(chat: ChatService, conv_id: str) -> dict[str, Any]:
    conv = chat.conversation(conv_id)
    effective = chat.filters(conv.id)
    own = Filters.from_dict(conv.filters) if conv.filters else Filters()
    return {
        "filters": own.to_dict() if own else None,
        "effective": effective.to_dict(),
        "origin": "conversation" if own else ("persona" if effective else None),
        "line": format_line(effective),
    }


@router.get(
    "/channels/{channel_id}/filters",
    summary="The default filters of a conversation's searches",
    response_model=ChannelFiltersAnswer,
    responses=errors(404, 501),
)
def channel_filters(channel_id: str, who: Caller = Depends(caller)) -> dict[str, Any]:
    chat, conv = _chat(who, channel_id)
    return _filters(chat, conv.id)


@router.put(
    "/channels/{channel_id}/filters",
    summary="Set (or, with null, clear) a conversation's default filters (needs kb.write)",
    response_model=ChannelFiltersAnswer,
    responses=errors(403, 404, 413, 501),
)
def set_channel_filters(channel_id: str, body: ChannelFilters, who: Caller = WRITES) -> dict[str, Any]:
    """``filters`` is the search body's filters object (every field described there); a bad
    one is a 400 whose one line names the field, and nothing changes."""
    chat, conv = _chat(who, channel_id)
    filters = Filters.from_dict(body.filters.model_dump(exclude_none=True)) if body.filters else Filters()
    chat.set_filters(conv.id, filters or None)
    return _filters(chat, conv.id)
