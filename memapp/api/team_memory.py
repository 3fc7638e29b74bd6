"""The team memory protocol of Claude Code's client (docs/design.md §10, §15), served by memhub.

`/api/claude_code/team_memory?repo=owner%2Frepo` with memhub API tokens as Bearer tokens. The
body is validated here; the PUT itself is `teamsync.protocol.do_put_team_memory`.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import examples
from memapp.api.errors import error_body, status_for
from memapp.api.serializers import ErrorSerializer, TeamMemoryPutSerializer
from memapp.api.stores import etag_value
from memapp.memdir.store_files import FileRejected, checksum
from memapp.stores.projects import REPO_SLUG_RE, canonical_ref
from teamsync.protocol import (
    NoTeamMemory,
    do_put_team_memory,
    entry_checksums,
    find_team_store,
    read_team_entries,
    team_memory_meta,
)

_SLUG = REPO_SLUG_RE  # `owner/repo` that stays inside the shared repository (see its comment)


def _error(status_code: int, code: str, message: str, **details) -> Response:
    return Response(error_body(code, message, {"error_code": code, **details}), status=status_code)


def _repo_slug(request: Request) -> str | None:
    slug = canonical_ref(request.query_params.get("repo", ""))  # `acme/app.git` is `acme/app`
    return slug if _SLUG.fullmatch(slug) else None


_PARAMETERS = [
    OpenApiParameter("repo", str, required=True, description="owner/repo"),
    OpenApiParameter("view", str, enum=["hashes"], description="checksums only"),
]
_ERRORS = {
    code: OpenApiResponse(ErrorSerializer, examples=[example])
    for code, example in examples.TEAM_MEMORY_ERRORS.items()
}
_UNCHANGED = OpenApiResponse(description="`If-None-Match` matched: nothing new to pull.")


@extend_schema(
    methods=["GET"],
    operation_id="getTeamMemory",
    summary="Pull a repository's team memory (Claude Code's protocol)",
    tags=["team memory"],
    parameters=_PARAMETERS,
    responses={
        200: OpenApiResponse(OpenApiTypes.OBJECT, examples=[examples.TEAM_MEMORY]),
        304: _UNCHANGED,
        **_ERRORS,
    },
)
@extend_schema(
    methods=["PUT"],
    operation_id="putTeamMemory",
    summary="Push entries to a repository's team memory (Claude Code's protocol)",
    tags=["team memory"],
    parameters=_PARAMETERS,
    request=OpenApiTypes.OBJECT,
    examples=[examples.PUT_TEAM_MEMORY],
    responses={
        200: OpenApiResponse(OpenApiTypes.OBJECT, examples=[examples.TEAM_MEMORY_PUT]),
        **_ERRORS,
    },
)
@api_view(["GET", "PUT"])
def team_memory(request: Request) -> Response:
    if request.method == "PUT":
        return _put(request)
    slug = _repo_slug(request)
    if slug is None:
        return _error(400, "invalid_repo", "repo must be an owner/repo slug.")
    try:
        store = find_team_store(request.user, slug, for_put=False)
    except NoTeamMemory as exc:
        return _error(404, exc.code, str(exc))
    if request.query_params.get("view") == "hashes":
        files, sums = None, entry_checksums(store)
    else:
        files = read_team_entries(store)
        sums = {key: checksum(data) for key, data in files.items()}
    if not sums:
        return _error(404, "empty", f"{store.project} has no team memory yet.")
    meta = team_memory_meta(store, sums)
    headers = {"ETag": f'"{meta.checksum}"'}
    if etag_value(request.headers.get("If-None-Match")) == meta.checksum:
        return Response(status=status.HTTP_304_NOT_MODIFIED, headers=headers)
    content = {"entryChecksums": sums}
    if files is not None:
        entries = {key: data.decode("utf-8", "replace") for key, data in files.items()}
        content = {"entries": entries, **content}
    return Response({**meta.as_json(), "content": content}, headers=headers)


def _put(request: Request) -> Response:
    body = TeamMemoryPutSerializer(data=request.data)
    if not body.is_valid():
        return _error(400, "bad_request", 'The body must be {"entries": {key: text}}.')
    slug = _repo_slug(request)
    if slug is None:
        return _error(400, "invalid_repo", "repo must be an owner/repo slug.")
    if_match = etag_value(request.headers.get("If-Match"))
    try:
        outcome = do_put_team_memory(request.user, slug, body.validated_data["entries"], if_match)
    except FileRejected as exc:
        return _error(status_for(exc.code), exc.code, str(exc), **exc.details)
    except NoTeamMemory as exc:
        return _error(404, exc.code, str(exc))
    return Response({**outcome.meta.as_json(), "held": outcome.held})
