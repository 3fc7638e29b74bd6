"""The agent API for snapshots: status and decision, and uploads from `memhub-agent`."""

from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import examples
from memapp.api.errors import ApiError
from memapp.api.serializers import StrictSerializer, Text
from memapp.memdir.agent_snapshots import read_snapshot_meta, snapshot_dir
from memapp.memdir.paths import agent_memory_dir
from memapp.stores.models import Project
from memapp.stores.projects import find_project
from snapshots.actions import UploadRejected, do_upload_snapshot
from snapshots.models import Checkout, SnapshotDecision
from snapshots.targets import SCOPES, Target, targets_for_checkout


def _text() -> serializers.CharField:
    return Text(allow_blank=True, trim_whitespace=False)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class SnapshotUploadSerializer(StrictSerializer):
    project_dirname = Text(
        max_length=255,
        required=False,
        default="",
        allow_blank=True,
        help_text="The sanitized directory name of the checkout, to find a project known by it.",
    )
    snapshot = serializers.DictField(
        child=_text(),
        allow_null=True,
        help_text="The snapshot dir's top-level files, snapshot.json included (null: none).",
    )
    scopes = serializers.DictField(
        child=serializers.DictField(child=_text(), allow_null=True),
        help_text="user/project/local → the agent memory dir's top-level files, the "
        "`.snapshot-synced.json` marker included (null or absent: the dir does not exist).",
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        unknown = sorted(set(attrs["scopes"]) - set(SCOPES))
        if unknown:
            raise serializers.ValidationError({"scopes": {s: ["Unknown scope."] for s in unknown}})
        groups = [attrs["snapshot"] or {}, *(f or {} for f in attrs["scopes"].values())]
        for files in groups:
            for name, text in files.items():
                if not (_encodable(name) and _encodable(text)):
                    raise serializers.ValidationError(f"{name!r}: not valid Unicode text.")
        return attrs


def _checkout(user, project: Project, origin: str | None) -> Checkout:
    checkouts = list(Checkout.objects.filter(owner=user, project=project))
    if origin:
        checkouts = [c for c in checkouts if c.origin == origin]
    # An agent's machine talks to its upload; the host's own agent to the host checkout.
    checkouts.sort(key=lambda c: (c.origin != Checkout.Origin.UPLOAD, -c.pk))
    if not checkouts:
        raise Http404("No checkout of this project.")
    return checkouts[0]


def _iso(moment) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def _decision(decision: SnapshotDecision | None) -> dict | None:
    if decision is None:
        return None
    return {
        "id": decision.pk,
        "decision": decision.decision,
        "updated_at": decision.updated_at,
        "files": decision.files,
        "decided_by": decision.decided_by.get_username() if decision.decided_by else None,
        "decided_at": _iso(decision.decided_at),
        "applied_at": _iso(decision.applied_at),
    }


def _scope(request: Request, target: Target) -> dict:
    url = reverse(
        "snapshot_review",
        kwargs={
            "checkout_id": target.checkout.pk,
            "agent_type": target.agent_type,
            "scope": target.scope,
        },
    )
    return {
        "scope": target.scope,
        "status": target.status.action,
        "reason": target.status.reason,
        "updated_at": target.status.updated_at,
        "synced_from": target.status.synced_from,
        "review_url": request.build_absolute_uri(url),
        "decision": _decision(target.decision),
    }


def _payload(request: Request, checkout: Checkout, agent: str) -> dict:
    targets = targets_for_checkout(checkout, agent)
    meta = read_snapshot_meta(snapshot_dir(checkout.repo, agent))
    return {
        "project": checkout.project.key,
        "agent_type": agent,
        "checkout": {"id": checkout.pk, "origin": checkout.origin},
        "snapshot": {"updated_at": meta.updated_at, "problem": meta.problem},
        "scopes": [_scope(request, t) for t in targets],
    }


@extend_schema(
    methods=["GET"],
    operation_id="getAgentSnapshot",
    summary="An agent's snapshot status and the decision made on it",
    tags=["snapshots"],
    parameters=[
        OpenApiParameter("origin", str, enum=["upload", "host"], required=False),
    ],
    responses=OpenApiResponse(OpenApiTypes.OBJECT, examples=[examples.AGENT_SNAPSHOT]),
)
@extend_schema(
    methods=["PUT"],
    operation_id="uploadAgentSnapshot",
    summary="Upload an agent's snapshot and memory for review",
    tags=["snapshots"],
    request=SnapshotUploadSerializer,
    examples=[examples.UPLOAD_SNAPSHOT],
    responses=OpenApiResponse(OpenApiTypes.OBJECT, examples=[examples.AGENT_SNAPSHOT]),
)
@api_view(["GET", "PUT"])
def agent_snapshot(request: Request, project_key: str, agent_type: str) -> Response:
    """GET: the snapshot status of each of the agent's memory scopes, and the decision made on
    it (what `memhub-agent snapshot apply` carries out). PUT: upload the agent machine's
    snapshot and memory dirs for review (`memhub-agent snapshot push`)."""
    try:
        agent = agent_memory_dir(agent_type, "project", repo="/").name
    except ValueError:
        raise Http404("No such agent.") from None
    if request.method == "PUT":
        if not project_key.strip() or len(project_key) > 255:
            raise ApiError(400, "invalid", "The project key must be 1 to 255 characters.")
        serializer = SnapshotUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            checkout = do_upload_snapshot(
                request.user,
                project_key,
                agent,
                data["snapshot"],
                data["scopes"],
                alias=data["project_dirname"],
            )
        except UploadRejected as exc:
            raise ApiError(exc.status, exc.code, str(exc), exc.details) from exc
        return Response(_payload(request, checkout, agent))
    project = find_project(project_key)
    if project is None:
        raise Http404("No such project.")
    origin = request.query_params.get("origin") or None
    if origin not in (None, *Checkout.Origin.values):
        raise ApiError(400, "invalid", "origin must be upload or host.")
    checkout = _checkout(request.user, project, origin)
    return Response(_payload(request, checkout, agent))
