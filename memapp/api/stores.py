"""Agent API: the stores a token's user can see, and their files (list, read, write, delete,
batch) with checksums as preconditions (docs/design.md §10, §18)."""

from __future__ import annotations

from collections.abc import Collection

from django.http import Http404
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
from memapp.api.auth import may_write
from memapp.api.errors import ApiError
from memapp.memdir.index import INDEX_FILENAME
from memapp.memdir.store_files import CHECKSUM_PREFIX, FileRejected, checksum
from memapp.stores.access import get_store_for_user
from memapp.stores.actions import (
    do_put_files,
    store_file_path,
)
from memapp.stores.models import Store, Via
from memapp.stores.projects import NoProject, resolve_store
from memapp.stores.withheld import (
    as_served,
    flagged_index_message,
    kept_back_message,
    withheld,
)


def etag_value(header: str | None) -> str | None:
    """An If-Match / If-None-Match value with quotes (and a weak prefix) stripped. A weak tag
    matches in If-Match too, unlike RFC 9110's strong comparison: a compressing proxy (nginx's
    gzip) weakens the ETags it passes on, and memhub's are checksums of the bytes, so a weak
    one still names exactly one content."""
    return header.strip().removeprefix("W/").strip('"') if header else None


def _expected_checksum(store: Store, key: str, header: str | None) -> str | None:
    """The checksum a file's If-Match asks it to have now, as RFC 9110 reads the header: `*`
    any existing file (412 at once when there is none), a list any of its tags (none current:
    the first, which makes the write's 412; an empty tag `""` matches no file). None: no
    precondition."""
    if not header or not header.strip():
        return None
    tags = [etag_value(tag) or "" for tag in header.split(",")]
    path = store_file_path(store, key)
    try:
        current = checksum(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError):
        current = None
    if "*" in tags:
        if current is None:
            raise ApiError(412, "precondition_failed", f"{key!r} does not exist (If-Match: *)")
        return current
    return current if current in tags else tags[0]


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
    `create` is false (a dry run must leave the server as it was) or the token may only read
    (then only a member's own private store is made)."""
    data = s.validated(s.ResolveStoreSerializer, request.data)
    writes = may_write(request.auth)
    try:
        store = resolve_store(
            request.user,
            data["project"],
            data["scope"],
            alias=data["project_dirname"],
            # A read-scope token makes nothing but the reader's own private store, as a read
            # does (resolve_store makes one only for a member).
            create=data["create"] and (writes or data["scope"] == Store.Kind.PRIVATE),
            new_project=writes,
        )
    except NoProject:
        raise  # 404 no_project (memapp.api.errors)
    except Http404:
        raise ApiError(404, "no_store", "No such store yet; a sync creates it.") from None
    return Response(s.StoreSerializer(store).data)


def _index_checksums(store: Store, paths: list[str], kept: Collection[str]) -> dict[str, str]:
    """The MEMORY.md files of the store (the mirror holds topic files only): the root's and
    one per folder that has topic files, each as the files API gives it (`_served`), but those in
    `kept` (`withheld`)."""
    folders = {""} | {path.rsplit("/", 1)[0] + "/" for path in paths if "/" in path}
    found = {}
    for folder in folders:
        key = f"{folder}{INDEX_FILENAME}"
        try:
            served = None if key in kept else _served(store, key)
        except (FileRejected, OSError):
            continue
        if served is not None:
            found[key] = checksum(served)
    return found


def _served(store: Store, key: str) -> bytes | None:
    """The file `key` of `store` as the files API gives it: whole, or not at all (None) when
    agents get other than the file (`as_served`: a team index listing a kept-back file, or
    holding a secret). A client writes back what it read, and must not drop lines unseen."""
    data = store_file_path(store, key).read_bytes()
    return data if as_served(store, key, data) == data else None


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
    """Every Markdown file of the store but those team sync keeps back; `?view=hashes` gives
    only `sha256:<hex>` per key."""
    store = get_store_for_user(request.user, store_id)
    kept = withheld(store)
    files = store.files.exclude(path__in=kept).order_by("path")
    if request.query_params.get("view") == "hashes":
        sums = {path: CHECKSUM_PREFIX + sha for path, sha in files.values_list("path", "sha256")}
        return Response({"checksums": {**sums, **_index_checksums(store, list(sums), kept)}})
    indexes = _index_checksums(store, list(files.values_list("path", flat=True)), kept)
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
    if key in withheld(store):
        raise ApiError(409, "kept_back", kept_back_message(key))
    try:
        data = _served(store, key)
    except (FileNotFoundError, IsADirectoryError):
        raise Http404 from None
    if data is None:
        raise ApiError(409, "kept_back", flagged_index_message(key))
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
    if request.method == "GET":
        return _file_response(store, key, request)
    if_match = _expected_checksum(store, key, request.headers.get("If-Match"))
    if request.method == "PUT":
        data = s.validated(s.FileContentSerializer, request.data)
        result = do_put_files(
            store,
            request.user,
            {key: data["content"]},
            if_match=None if if_match is None else {key: if_match},
        )
        new = checksum(data["content"].encode())
        code = status.HTTP_200_OK if key in result["unchanged"] else status.HTTP_201_CREATED
        return Response(
            {"key": key, "checksum": new, **result}, status=code, headers={"ETag": f'"{new}"'}
        )
    if not store_file_path(store, key).is_file():
        raise Http404
    do_put_files(
        store,
        request.user,
        {},
        delete=(key,),
        if_match=None if if_match is None else {key: if_match},
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
    data = s.validated(s.BatchSerializer, request.data)
    result = do_put_files(
        store,
        request.user,
        data["files"],
        delete=tuple(data["delete"]),
        if_match=data["base"],
        via=Via.AGENT_SYNC,
        mtimes=data["mtimes"],
    )
    files = store.files.exclude(path__in=withheld(store)).only("store", "path", "sha256")
    return Response({**result, "checksums": {f.path: f.checksum for f in files}})
