"""Agent API: what an agent reads at each moment: the prompt's memory section, recall, what
recall surfaced, and the session start (docs/design.md §7–§9, §16)."""

from __future__ import annotations

from dataclasses import asdict

from django.urls import reverse
from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import examples
from memapp.api import serializers as s
from memapp.api.auth import may_write
from memapp.api.errors import ApiError
from memapp.lifecycle.summaries import hook_summary
from memapp.stores.models import Store
from memapp.stores.projects import no_project_message, reading_store
from memapp.stores.prompting import agent_store_for, assemble_for
from memapp.stores.recall import mark_surfaced, recall_for
from memapp.stores.session_start import session_start_for
from memapp.stores.warm import remembered


def _reading_store(user, data, may_write: bool) -> Store | None:
    """The user's private store of the project a prompt or recall is about
    (`reading_store`: made only for a member, or in a new project when the token may write);
    None: a project the user cannot reach. Kept by a warm worker (memapp.stores.warm)."""
    key = ("reading-store", user.pk, data["project"], data["project_dirname"], may_write)
    return remembered(
        key,
        lambda: reading_store(
            user, data["project"], alias=data["project_dirname"], new_project=may_write
        ),
    )


def _memory_store(user, data, may_write: bool) -> Store:
    """The store a prompt or recall is about: the agent's own when `agent_type` is given (404
    when memhub has none of it), else the user's private store of the project."""
    private = _reading_store(user, data, may_write)
    if private is None:
        raise ApiError(404, "no_project", no_project_message(data["project"]))
    if not data["agent_type"]:
        return private
    store = agent_store_for(user, private.project, data["agent_type"], data["agent_scope"])
    if store is None:
        raise ApiError(404, "no_store", "memhub has no memory of this agent in this scope.")
    return store


@extend_schema(
    methods=["GET"],
    operation_id="getPrompt",
    summary="The memory section of the system prompt",
    tags=["agents"],
    parameters=[s.PromptSerializer],
    responses=s.PromptResultSerializer,
)
@extend_schema(
    methods=["POST"],
    operation_id="buildPrompt",
    summary="The memory section of the system prompt (parameters in the body)",
    tags=["agents"],
    request=s.PromptSerializer,
    examples=[examples.PROMPT],
    responses=s.PromptResultSerializer,
)
@api_view(["GET", "POST"])
def prompt(request: Request) -> Response:
    """The memory section of the agent's system prompt; the mode follows the flags. With
    `agent_type`, the agent's own memory in individual mode."""
    data = s.validated(
        s.PromptSerializer,
        request.data if request.method == "POST" else request.query_params.dict(),
    )
    return Response(prompt_answer(request.user, data, may_write=may_write(request.auth)))


def prompt_answer(user, data, *, may_write: bool) -> dict:
    """What `prompt` answers to `data`, validated (memapp.api.plain_views answers it too);
    `may_write`: whether the token's scope allows writing."""
    store = _memory_store(user, data, may_write)
    result = assemble_for(user, store, data["memory_dir"] or None)
    return {
        "text": result.text,
        "mode": result.mode,
        "sections": result.sections,
        "indexes": [asdict(info) for info in result.indexes],
    }


@extend_schema(
    operation_id="recall",
    summary="Recall the memories that fit a query",
    tags=["agents"],
    request=s.RecallSerializer,
    examples=[examples.RECALL],
    responses=s.RecallResultSerializer,
)
@api_view(["POST"])
def recall(request: Request) -> Response:
    """At most 5 memories that fit the query, each with its header, plus the rendered block.
    With `agent_type`, from the agent's own memory (from the project's when memhub has none of
    that agent)."""
    data = s.validated(s.RecallSerializer, request.data)
    return Response(recall_answer(request.user, data, may_write=may_write(request.auth)))


def recall_answer(user, data, *, may_write: bool) -> dict:
    """What `recall` answers to `data`, validated (memapp.api.plain_views answers it too);
    `may_write`: whether the token's scope allows writing."""
    private = _reading_store(user, data, may_write)
    if private is None:  # hooks expect an answer: nothing to recall, and why
        return {
            "memories": [],
            "rendered": "",
            "selector": "offline",
            "fallback_reason": no_project_message(data["project"]),
        }
    store = private
    if data["agent_type"]:
        agent = agent_store_for(user, private.project, data["agent_type"], data["agent_scope"])
        store = agent or private
    outcome = recall_for(
        user,
        store,
        data["query"],
        recent_tools=tuple(data["recent_tools"]),
        already_surfaced=tuple(data["already_surfaced"]),
        scope=data["scope"],
        memory_dir=data["memory_dir"] or None,
        session_id=data["session_id"] or None,
        wait_ms=data["wait_ms"],
        project=private.project,
    )
    return {
        "memories": outcome.memories,
        "rendered": outcome.rendered,
        "selector": outcome.selector,
        "fallback_reason": outcome.fallback_reason,
    }


@extend_schema(
    operation_id="markSurfaced",
    summary="Count files as already shown to a session",
    tags=["agents"],
    request=s.SurfacedSerializer,
    examples=[examples.MARK_SURFACED],
    responses=s.SurfacedResultSerializer,
)
@api_view(["POST"])
def recall_surfaced(request: Request) -> Response:
    """Count files as already shown to a session (the agent read them), so recall skips them."""
    data = s.validated(s.SurfacedSerializer, request.data)
    added = mark_surfaced(request.user, data["session_id"], data["paths"])
    return Response({"added": added})


@extend_schema(
    operation_id="startSession",
    summary="What a session-start hook needs: changed files, team index, what waits",
    tags=["agents"],
    request=s.SessionStartSerializer,
    examples=[examples.SESSION_START],
    responses=s.SessionStartResultSerializer,
)
@api_view(["POST"])
def session_start(request: Request) -> Response:
    """Everything a session-start hook needs in one answer: the private store's files that
    differ from the agent's, the team index, and what waits for the user's review."""
    data = s.validated(s.SessionStartSerializer, request.data)
    answer = session_start_for(
        request.user,
        data["project"],
        alias=data["project_dirname"],
        memory_dir=data["memory_dir"] or None,
        have=data["have"],
        team_index=data["team_index"],
        site_url=request.build_absolute_uri("/"),
    )
    return Response(
        {
            "store": answer.store,
            "checksums": answer.checksums,
            "files": answer.files,
            "mtimes": answer.mtimes,
            "partial": answer.partial,
            "team_index": answer.team_index,
            "waiting": [
                {
                    "kind": item.kind.key,
                    "label": item.kind.label,
                    "count": item.count,
                    "url": request.build_absolute_uri(reverse(item.kind.url_name)),
                }
                for item in answer.waiting
            ],
            "notice": answer.notice,
            "session_summary": hook_summary(request.user, data["session_id"])
            if data["source"] in ("resume", "compact") and data["session_id"]
            else "",
        }
    )
