"""A channel's knowledge bases: a channel is a kbdesk conversation.

Each row says whether the KB is on in that conversation and why (``origin``: its
persona, its project, the conversation itself, or a personal KB on by default);
``locked`` rows come from the persona or project and are changed there.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from kbdesk.errors import NotFoundError
from kbdesk.serve.auth import WRITES, Caller, caller, is_uuid
from kbdesk.serve.errors import ApiError
from kbdesk.serve.responses import ChannelKbs as ChannelKbsAnswer
from kbdesk.serve.responses import errors
from kbdesk.serve.schemas import ChannelKbs
from kbdesk.store.api import CHAT

router = APIRouter(tags=["channels"])


def _chat(who: Caller, channel_id: str) -> tuple[Any, Any]:
    if CHAT not in who.desk.store.capabilities:
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
