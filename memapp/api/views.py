"""Agent API views: thin wrappers over `memapp.stores.actions`, scoped by the token's user."""

from __future__ import annotations

from dataclasses import asdict
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import examples
from memapp.api import serializers as s
from memapp.api.errors import ApiError
from memapp.lifecycle.summaries import hook_summary
from memapp.memdir.frontmatter import FrontmatterError
from memapp.memdir.index import INDEX_FILENAME
from memapp.memdir.store_files import CHECKSUM_PREFIX, FileRejected, checksum
from memapp.stores.access import get_store_for_user
from memapp.stores.actions import (
    do_forget_memory,
    do_put_files,
    do_save_memory,
    store_file_path,
)
from memapp.stores.models import Store, Via
from memapp.stores.projects import find_project, no_project_message, resolve_store
from memapp.stores.prompting import agent_store_for, assemble_for
from memapp.stores.recall import mark_surfaced, recall_for
from memapp.stores.session_start import session_start_for
from memapp.stores.tokens import do_revoke_api_token
from memapp.stores.warm import remembered


def etag_value(header: str | None) -> str | None:
    """An If-Match / If-None-Match value with quotes (and a weak prefix) stripped."""
    return header.strip().removeprefix("W/").strip('"') if header else None


def _validated(serializer_class, data):
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _store_from(user, data) -> Store:
    if "store" in data:
        return get_store_for_user(user, data["store"])
    return resolve_store(user, data["project"], data["scope"])


@extend_schema(
    operation_id="listStores",
    summary="List the stores I can see",
    tags=["stores"],
    responses=s.StoreListSerializer,
)
@api_view(["GET"])
def store_list(request: Request) -> Response:
    stores = Store.objects.visible_to(request.user).select_related("project")
    return Response({"stores": s.StoreSerializer(stores, many=True).data})


@extend_schema(
    operation_id="resolveStore",
    summary="Find (or create) a project's store",
    tags=["stores"],
    request=s.ResolveStoreSerializer,
    examples=[examples.RESOLVE_STORE],
    responses={
        200: s.StoreSerializer,
        404: OpenApiResponse(s.ErrorSerializer, "No such store (`no_store` with `create: false`)."),
    },
)
@api_view(["POST"])
def store_resolve(request: Request) -> Response:
    """The caller's private store or the project's team store, created on first use unless
    `create` is false (a dry run must leave the server as it was)."""
    data = _validated(s.ResolveStoreSerializer, request.data)
    try:
        store = resolve_store(
            request.user,
            data["project"],
            data["scope"],
            alias=data["project_dirname"],
            create=data["create"],
        )
    except Http404:
        if data["create"]:
            raise ApiError(404, "no_project", no_project_message(data["project"])) from None
        raise ApiError(404, "no_store", "No such store yet; a sync creates it.") from None
    return Response(s.StoreSerializer(store).data)


def _index_checksums(store: Store, paths: list[str]) -> dict[str, str]:
    """The MEMORY.md files of the store (the mirror holds topic files only): the root's and
    one per folder that has topic files."""
    folders = {""} | {path.rsplit("/", 1)[0] + "/" for path in paths if "/" in path}
    found = {}
    for folder in folders:
        key = f"{folder}{INDEX_FILENAME}"
        try:
            found[key] = checksum(store_file_path(store, key).read_bytes())
        except (FileRejected, OSError):
            continue
    return found


@extend_schema(
    operation_id="listFiles",
    summary="List a store's files (or their checksums)",
    tags=["files"],
    parameters=[OpenApiParameter("view", str, enum=["hashes"], required=False)],
    responses=PolymorphicProxySerializer(
        component_name="FileListing",
        serializers=[s.FileListSerializer, s.FileHashesSerializer],
        resource_type_field_name=None,
    ),
)
@api_view(["GET"])
def file_list(request: Request, store_id: int) -> Response:
    """Every Markdown file of the store; `?view=hashes` gives only `sha256:<hex>` per key."""
    store = get_store_for_user(request.user, store_id)
    files = store.files.order_by("path")
    if request.query_params.get("view") == "hashes":
        sums = {path: CHECKSUM_PREFIX + sha for path, sha in files.values_list("path", "sha256")}
        return Response({"checksums": {**sums, **_index_checksums(store, list(sums))}})
    indexes = _index_checksums(store, list(files.values_list("path", flat=True)))
    return Response(
        {
            "files": [
                {
                    "key": f.path,
                    "checksum": f.checksum,
                    "size": f.size,
                    "mtime_ms": f.mtime_ms,
                    "name": f.name,
                    "description": f.description,
                    "type": f.type or None,
                }
                for f in files.defer("body")
            ]
            + [
                {"key": key, "checksum": sum_, "name": "", "description": "", "type": None}
                for key, sum_ in indexes.items()
            ]
        }
    )


def _file_response(store: Store, key: str, request: Request) -> Response:
    path = store_file_path(store, key)
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        raise Http404 from None
    etag = checksum(data)
    if etag_value(request.headers.get("If-None-Match")) == etag:
        return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": f'"{etag}"'})
    body = {
        "key": key,
        "content": data.decode("utf-8", "replace"),
        "checksum": etag,
        "mtime_ms": path.stat().st_mtime_ns // 1_000_000,
    }
    return Response(body, headers={"ETag": f'"{etag}"'})


@extend_schema(
    methods=["GET"],
    operation_id="getFile",
    summary="Read a file",
    tags=["files"],
    responses={200: s.FileSerializer, 304: OpenApiResponse(description="`If-None-Match` matched.")},
)
@extend_schema(
    methods=["PUT"],
    operation_id="putFile",
    summary="Write a file",
    tags=["files"],
    request=s.FileContentSerializer,
    examples=[examples.PUT_FILE],
    responses={200: s.FilePutResultSerializer, 201: s.FilePutResultSerializer},
)
@extend_schema(
    methods=["DELETE"],
    operation_id="deleteFile",
    summary="Delete a file",
    tags=["files"],
    responses={204: None},
)
@api_view(["GET", "PUT", "DELETE"])
def file_detail(request: Request, store_id: int, key: str) -> Response:
    """One file of a store. PUT and DELETE honour `If-Match` (412 when the file changed)."""
    store = get_store_for_user(request.user, store_id)
    if_match = etag_value(request.headers.get("If-Match"))
    if request.method == "GET":
        return _file_response(store, key, request)
    if request.method == "PUT":
        data = _validated(s.FileContentSerializer, request.data)
        result = do_put_files(
            store,
            request.user,
            {key: data["content"]},
            if_match={key: if_match} if if_match else None,
        )
        new = checksum(data["content"].encode())
        code = status.HTTP_200_OK if key in result["unchanged"] else status.HTTP_201_CREATED
        return Response(
            {"key": key, "checksum": new, **result}, status=code, headers={"ETag": f'"{new}"'}
        )
    if not store_file_path(store, key).is_file():
        raise Http404
    do_put_files(
        store, request.user, {}, delete=(key,), if_match={key: if_match} if if_match else None
    )
    return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(
    operation_id="syncFiles",
    summary="Upload and delete files in one all-or-nothing batch",
    tags=["files"],
    request=s.BatchSerializer,
    examples=[examples.SYNC_FILES],
    responses=s.BatchResultSerializer,
)
@api_view(["POST"])
def file_batch(request: Request, store_id: int) -> Response:
    """Upload changed files and delete others in one all-or-nothing request."""
    store = get_store_for_user(request.user, store_id)
    data = _validated(s.BatchSerializer, request.data)
    result = do_put_files(
        store,
        request.user,
        data["files"],
        delete=tuple(data["delete"]),
        if_match=data["base"],
        via=Via.AGENT_SYNC,
    )
    checksums = {f.path: f.checksum for f in store.files.only("store", "path", "sha256")}
    return Response({**result, "checksums": checksums})


@extend_schema(
    operation_id="remember",
    summary="Remember something (write a memory and its index line)",
    tags=["memories"],
    request=s.RememberSerializer,
    examples=[examples.REMEMBER],
    responses={201: s.RememberResultSerializer},
)
@api_view(["POST"])
def remember(request: Request) -> Response:
    """Create or replace a memory from its fields: the topic file and its MEMORY.md line."""
    data = _validated(s.RememberSerializer, request.data)
    store = _store_from(request.user, data)
    try:
        file = do_save_memory(
            store,
            request.user,
            name=data["name"],
            description=data["description"],
            memory_type=data.get("type"),
            body=data["body"],
            path=data.get("path"),
            via="api",
        )
    except FileNotFoundError:
        raise Http404 from None
    except FrontmatterError as exc:
        raise ApiError(400, "invalid_memory", str(exc)) from exc
    return Response(
        {"store": store.pk, "key": file.path, "checksum": file.checksum},
        status=status.HTTP_201_CREATED,
    )


@extend_schema(
    operation_id="forget",
    summary="Forget a memory",
    tags=["memories"],
    request=s.ForgetSerializer,
    examples=[examples.FORGET],
    responses={204: None},
)
@api_view(["POST"])
def forget(request: Request) -> Response:
    """Delete a memory's file and its MEMORY.md line."""
    data = _validated(s.ForgetSerializer, request.data)
    store = _store_from(request.user, data)
    if not store_file_path(store, data["path"]).is_file():
        raise Http404
    do_forget_memory(store, request.user, data["path"], via="api")
    return Response(status=status.HTTP_204_NO_CONTENT)


def _reading_store(user, data) -> Store | None:
    """The user's private store of the project a prompt or recall is about. Reading makes one
    only in a project the user belongs to (or a new one): a non-member's recall leaves no store
    behind in someone else's project. None: a non-member who kept no store from before. Kept
    by a warm worker (memapp.stores.warm)."""
    key = ("reading-store", user.pk, data["project"], data["project_dirname"])
    return remembered(key, lambda: _find_reading_store(user, data))


def _find_reading_store(user, data) -> Store | None:
    project = find_project(data["project"]) or (
        find_project(data["project_dirname"]) if data["project_dirname"] else None
    )
    member = project is None or project.members.filter(pk=user.pk).exists()
    try:
        return resolve_store(
            user, data["project"], "private", alias=data["project_dirname"], create=member
        )
    except Http404:
        if member:
            raise
        return None


NOT_A_MEMBER = "You are not a member of this project: ask an admin to add you."


def _memory_store(user, data) -> Store:
    """The store a prompt or recall is about: the agent's own when `agent_type` is given (404
    when memhub has none of it), else the user's private store of the project."""
    private = _reading_store(user, data)
    if private is None:
        raise ApiError(404, "not_a_member", NOT_A_MEMBER)
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
    data = _validated(
        s.PromptSerializer,
        request.data if request.method == "POST" else request.query_params.dict(),
    )
    store = _memory_store(request.user, data)
    result = assemble_for(request.user, store, data["memory_dir"] or None)
    return Response(
        {
            "text": result.text,
            "mode": result.mode,
            "sections": result.sections,
            "indexes": [asdict(info) for info in result.indexes],
        }
    )


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
    data = _validated(s.RecallSerializer, request.data)
    private = _reading_store(request.user, data)
    if private is None:  # hooks expect an answer: nothing to recall, and why
        return Response(
            {"memories": [], "rendered": "", "selector": "offline", "fallback_reason": NOT_A_MEMBER}
        )
    store = private
    if data["agent_type"]:
        agent = agent_store_for(
            request.user, private.project, data["agent_type"], data["agent_scope"]
        )
        store = agent or private
    outcome = recall_for(
        request.user,
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
    return Response(
        {
            "memories": outcome.memories,
            "rendered": outcome.rendered,
            "selector": outcome.selector,
            "fallback_reason": outcome.fallback_reason,
        }
    )


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
    data = _validated(s.SurfacedSerializer, request.data)
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
    data = _validated(s.SessionStartSerializer, request.data)
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


@extend_schema(
    operation_id="getAccount",
    summary="The token's user, the token, and the server's version",
    tags=["account"],
    responses=s.MeSerializer,
)
@api_view(["GET"])
def me(request: Request) -> Response:
    """Who the token belongs to, which token it is, and the server's version."""
    token = request.auth
    return Response(
        {
            "username": request.user.get_username(),
            "token": {
                "name": token.name,
                "prefix": token.prefix,
                "created_at": token.created_at,
                "last_used_at": token.last_used_at,
            },
            "version": memhub_version(),
        }
    )


@extend_schema(
    operation_id="revokeToken",
    summary="Revoke the token this request carries",
    tags=["account"],
    responses={204: None},
)
@api_view(["DELETE"])
def revoke_token(request: Request) -> Response:
    """Revoke the token this request carries (`memhub-agent logout`)."""
    do_revoke_api_token(request.auth)
    return Response(status=status.HTTP_204_NO_CONTENT)


def memhub_version() -> str:
    try:
        return package_version("memhub")
    except PackageNotFoundError:
        return "unknown"


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
def not_found(request: Request, rest: str = "") -> Response:
    raise Http404
