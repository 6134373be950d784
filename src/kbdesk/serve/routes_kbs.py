"""Knowledge bases: list, create, show, change, delete, and the discoverable flag."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from kbdesk.serve.auth import CREATES, WRITES, Caller, caller
from kbdesk.serve.errors import ApiError
from kbdesk.serve.responses import Deleted as DeletedBody
from kbdesk.serve.responses import DiscoverableState, KnowledgeBase, KnowledgeBases, errors
from kbdesk.serve.schemas import Discoverable, KbCreate, KbUpdate

router = APIRouter(tags=["knowledge bases"])


@router.get(
    "/knowledge-bases", summary="The knowledge bases you can use", response_model=KnowledgeBases, responses=errors()
)
def list_kbs(who: Caller = Depends(caller)) -> dict[str, Any]:
    kbs = who.desk.list_kbs()
    return {"data": [kb.to_dict() for kb in kbs], "total": len(kbs)}


@router.post(
    "/knowledge-bases",
    status_code=201,
    summary="Create a knowledge base (needs kb.create)",
    response_model=KnowledgeBase,
    responses=errors(403, 404, 409, 413),
)
def create_kb(body: KbCreate, who: Caller = CREATES) -> dict[str, Any]:
    if body.scope == "team" and not body.team_id:
        raise ApiError(400, "a team knowledge base needs team_id")
    if body.scope != "team" and body.team_id:
        raise ApiError(400, f"team_id is only for team knowledge bases, not {body.scope} ones")
    who.check_can_create(body.scope, body.team_id)
    kb = who.desk.create_kb(
        body.name,
        body.description,
        scope=body.scope,
        team_id=body.team_id,
        keyword_only=body.keyword_only,
        chunk_size=body.chunk_size,
        chunk_overlap=body.chunk_overlap,
    )
    return kb.to_dict()


@router.get(
    "/knowledge-bases-discoverable",
    summary="The knowledge bases a picker shows",
    response_model=KnowledgeBases,
    responses=errors(),
)
def discoverable_kbs(who: Caller = Depends(caller)) -> dict[str, Any]:
    kbs = [kb for kb in who.desk.list_kbs() if kb.discoverable]
    return {"data": [kb.to_dict() for kb in kbs], "total": len(kbs)}


@router.get(
    "/knowledge-bases/{kb_id}", summary="One knowledge base", response_model=KnowledgeBase, responses=errors(404)
)
def get_kb(kb_id: str, who: Caller = Depends(caller)) -> dict[str, Any]:
    return who.kb(kb_id).to_dict()


@router.put(
    "/knowledge-bases/{kb_id}",
    summary="Rename or describe a knowledge base (needs kb.write)",
    response_model=KnowledgeBase,
    responses=errors(403, 404, 409, 413),
)
def update_kb(kb_id: str, body: KbUpdate, who: Caller = WRITES) -> dict[str, Any]:
    kb = who.kb(kb_id)
    changes = body.model_dump(exclude_unset=True)
    if any(value is None for value in changes.values()):
        raise ApiError(400, "name and description cannot be null; leave a field out to keep it")
    if not changes:
        raise ApiError(400, "nothing to change: send name and/or description")
    return who.desk.edit_kb(kb.id, **changes).to_dict()


@router.delete(
    "/knowledge-bases/{kb_id}",
    summary="Delete a knowledge base and its documents (needs kb.write)",
    response_model=DeletedBody,
    responses=errors(403, 404),
)
def delete_kb(kb_id: str, who: Caller = WRITES) -> dict[str, Any]:
    kb = who.kb(kb_id)
    who.check_can_change(kb)
    who.desk.delete_kb(kb.id)
    return {"deleted": True}


@router.put(
    "/knowledge-bases/{kb_id}/discoverable",
    summary="Show or hide a knowledge base in pickers (owner or system admin; needs kb.write)",
    response_model=DiscoverableState,
    responses=errors(403, 404, 413),
)
def set_discoverable(kb_id: str, body: Discoverable, who: Caller = WRITES) -> dict[str, Any]:
    kb = who.desk.edit_kb(who.kb(kb_id).id, discoverable=body.discoverable)
    return {"id": kb.id, "discoverable": kb.discoverable}
