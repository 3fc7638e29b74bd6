"""Agent API of the memory lifecycle (docs/design.md §14): session transcripts in, proposals to
decide, past-context search. Everything is the token owner's own: another person's session or
proposal is a 404."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import examples
from memapp.api import serializers as s
from memapp.api.consolidation import apply_store_proposal
from memapp.api.errors import ApiError
from memapp.lifecycle.access import get_agent_session_for_user, get_proposal_for_user
from memapp.lifecycle.extraction import wants_extraction
from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.past_context import Hit, search_past_context
from memapp.lifecycle.proposals import (
    AccessLost,
    ProposalClosed,
    do_apply_proposal,
    do_reject_proposal,
)
from memapp.lifecycle.sessions import (
    SESSION_ID_RE,
    do_forget_session,
    do_ingest_entries,
    skip_sentences,
)
from memapp.lifecycle.store_proposals import INDEX_KEY, index_as_approved, is_store_wide
from memapp.lifecycle.tasks import request_extraction, request_summary
from memapp.stores.flags import get_flags
from memapp.stores.projects import resolve_store


def _session_id(value: str) -> str:
    if not SESSION_ID_RE.fullmatch(value):
        raise ApiError(400, "invalid_session", "A session id is letters, digits, `.`, `:`, `-`.")
    return value


@extend_schema(
    operation_id="uploadSessionEntries",
    summary="Upload a session's new transcript entries",
    tags=["sessions"],
    request=s.SessionEntriesSerializer,
    examples=[examples.SESSION_ENTRIES],
    responses=s.SessionEntriesResultSerializer,
)
@api_view(["POST"])
def session_entries(request: Request, session_id: str) -> Response:
    """Upload the entries of a session's transcript after its cursor (idempotent by entry
    uuid). They are redacted before they are stored and kept private to the token's owner."""
    session_id = _session_id(session_id)
    serializer = s.SessionEntriesSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    store = resolve_store(request.user, data["project"], "private", alias=data["project_dirname"])
    result = do_ingest_entries(
        request.user,
        store,
        session_id,
        data["entries"],
        cwd=data["cwd"],
        memory_dir=data["memory_dir"],
        final=data["final"],
        client_skipped=data["skipped"],
        auto_dream=data["auto_dream"],
        agent=data["agent"],
    )
    session = result.session
    flags = get_flags(store.project)
    if not (flags["extraction"] and flags["auto_memory"]):
        extraction = "off"
    elif wants_extraction(session, flags, data["final"]):
        extraction = request_extraction(store, request.user)
    else:
        extraction = "waiting"
    return Response(
        {
            "session": session.session_id,
            "received": result.received,
            "stored": result.stored,
            "duplicates": result.duplicates,
            "redacted": result.redacted,
            "skipped": dict(result.skipped),
            "entry_count": session.entry_count,
            "extraction": extraction,
            "summary": request_summary(session),
        }
    )


def _summary_data(session) -> dict | None:
    summary = getattr(session, "summary", None)
    if summary is None or not summary.built:
        return None
    return {
        "text": summary.text,
        "selector": summary.selector,
        "through": summary.through,
        "updates": summary.updates,
        "updated_at": summary.updated_at,
        "error": summary.error,
    }


@extend_schema(
    methods=["GET"],
    operation_id="getSession",
    summary="A session: its counts, why lines were not kept, and its summary",
    tags=["sessions"],
    responses=s.SessionDetailSerializer,
)
@extend_schema(
    methods=["DELETE"],
    operation_id="forgetSession",
    summary="Forget a session (delete its transcript)",
    tags=["sessions"],
    responses={204: None},
)
@api_view(["GET", "DELETE"])
def session_detail(request: Request, session_id: str) -> Response:
    """GET: one of the caller's sessions with its rolling summary (docs/design.md §14.10).
    DELETE: forget it; its transcript is deleted."""
    session = get_agent_session_for_user(request.user, _session_id(session_id))
    if request.method == "DELETE":
        do_forget_session(session)
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(
        {
            "session": session.session_id,
            "project": session.project.key,
            "title": session.title,
            "entry_count": session.entry_count,
            "tokens": session.tokens,
            "skipped": session.skipped,
            "skip_reasons": skip_sentences(session.skipped),
            "started_at": session.started_at,
            "last_entry_at": session.last_entry_at,
            "ended_at": session.ended_at,
            "summary": _summary_data(session),
        }
    )


def proposal_data(proposal: Proposal) -> dict:
    store = proposal.store
    changes = list(proposal.changes.all())
    return {
        "id": proposal.pk,
        "kind": proposal.kind,
        "status": proposal.status,
        "store": store.pk,
        "scope": store.kind,
        "project": store.project.key if store.project else None,
        "created_at": proposal.created_at,
        "sessions": [session.session_id for session in proposal.sessions.all()],
        "changes": [
            {
                "id": change.pk,
                "action": change.action,
                "file": change.key,
                "name": change.name,
                "description": change.description,
                "type": change.type or None,
                "body": index_as_approved(proposal, change)
                if change.key == INDEX_KEY and change.status == ProposalChange.Status.PENDING
                else change.body,
                "scope": change.scope or store.kind,
                "reason": change.reason,
                "status": change.status,
                "checks": change.checks,
                "message": change.message,
            }
            for change in changes
        ],
        "dropped": proposal.dropped,
    }


@extend_schema(
    operation_id="listProposals",
    summary="List my proposals",
    tags=["proposals"],
    parameters=[OpenApiParameter("status", str, enum=["pending", "applied", "rejected", "failed"])],
    responses=s.ProposalListSerializer,
)
@api_view(["GET"])
def proposal_list(request: Request) -> Response:
    """The caller's proposals, newest first (only pending ones with `?status=pending`)."""
    proposals = Proposal.objects.visible_to(request.user).select_related("store__project")
    wanted = request.query_params.get("status")
    if wanted:
        if wanted not in Proposal.Status.values:
            raise ApiError(400, "bad_request", f"unknown status {wanted[:40]!r}")
        proposals = proposals.filter(status=wanted)
    proposals = proposals.prefetch_related("changes", "sessions")[:200]
    return Response({"proposals": [proposal_data(p) for p in proposals]})


def _decided(proposal: Proposal, result) -> Response:
    proposal.refresh_from_db()
    return Response({"proposal": proposal_data(proposal), **result.__dict__})


@extend_schema(
    operation_id="approveProposal",
    summary="Approve a proposal's changes",
    tags=["proposals"],
    request=s.ApproveSerializer,
    examples=[examples.APPROVE],
    responses=s.DecisionResultSerializer,
)
@api_view(["POST"])
def proposal_approve(request: Request, proposal_id: int) -> Response:
    """Apply a proposal's pending changes (those named in `changes`, else all) through the
    normal write path; a file changed since the proposal is reported as a conflict."""
    proposal = get_proposal_for_user(request.user, proposal_id)
    serializer = s.ApproveSerializer(data=request.data or {})
    serializer.is_valid(raise_exception=True)
    try:
        if is_store_wide(proposal):
            result = apply_store_proposal(proposal, request.user, serializer.validated_data)
        else:
            result = do_apply_proposal(proposal, request.user, serializer.validated_data["changes"])
    except ProposalClosed as exc:
        raise ApiError(409, "proposal_closed", str(exc)) from None
    except AccessLost:
        raise ApiError(404, "not_found", "No such proposal.") from None
    except ValueError as exc:
        raise ApiError(400, "invalid", str(exc)) from None
    return _decided(proposal, result)


@extend_schema(
    operation_id="rejectProposal",
    summary="Reject a proposal",
    tags=["proposals"],
    request=None,
    responses=s.DecisionResultSerializer,
)
@api_view(["POST"])
def proposal_reject(request: Request, proposal_id: int) -> Response:
    """Reject what is still open in a proposal; nothing is written."""
    proposal = get_proposal_for_user(request.user, proposal_id)
    try:
        result = do_reject_proposal(proposal, request.user)
    except ProposalClosed as exc:
        raise ApiError(409, "proposal_closed", str(exc)) from None
    return _decided(proposal, result)


def hit_data(request: Request, hit: Hit) -> dict:
    data = {"kind": hit.kind, "title": hit.title, "snippet": hit.snippet_text, "score": hit.score}
    if hit.kind == "memory":
        url = reverse("memory", kwargs={"store_id": hit.store_id, "path": hit.path})
        data.update(store=hit.store_id, path=hit.path)
    elif hit.kind == "summary":
        url = reverse("session", kwargs={"session_pk": hit.session_id}) + "#summary"
        data.update(session_id=hit.agent_session_id, when=hit.when)
    else:
        url = reverse("session", kwargs={"session_pk": hit.session_id}) + f"#e{hit.seq}"
        data.update(session_id=hit.agent_session_id, seq=hit.seq, when=hit.when)
    return {**data, "url": request.build_absolute_uri(url)}


@extend_schema(
    operation_id="searchPastContext",
    summary="Search my past sessions and memories",
    tags=["sessions"],
    parameters=[
        OpenApiParameter("q", str, required=True),
        OpenApiParameter("limit", int, required=False),
    ],
    responses=s.SearchResultSerializer,
)
@api_view(["GET"])
def search(request: Request) -> Response:
    """Past-context search over the caller's own sessions and the memories they may see."""
    query = request.query_params.get("q", "").strip()
    if not query:
        raise ApiError(400, "bad_request", "Give a query: ?q=…")
    raw_limit = request.query_params.get("limit", "20")
    limit = int(raw_limit) if raw_limit.isdigit() else 20
    result = search_past_context(request.user, query, max(1, min(limit, 100)), for_agent=True)
    return Response(
        {
            "query": result.query,
            "memories": [hit_data(request, hit) for hit in result.memories],
            "sessions": [hit_data(request, hit) for hit in result.sessions],
        }
    )
