"""The team memory protocol of Claude Code's client (docs/design.md §10, §15), served by memhub.

`/api/claude_code/team_memory?repo=owner%2Frepo` with memhub API tokens as Bearer tokens. A PUT
is an upsert through the same write path as every other change (so it becomes a commit authored
by the token's user). Everything a PUT could be refused for is checked before anything is
written, the project it may create included. A key deleted in memhub and uploaded again is held
as a conflict for review instead of coming back to life: the protocol client never deletes, so
even one that has just fetched the current checksum re-uploads what it still has.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from pathlib import Path

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import examples
from memapp.api.errors import error_body
from memapp.api.views import etag_value
from memapp.memdir.secret_gate import scan_for_push
from memapp.stores.actions import FileRejected, do_put_files, store_file_path
from memapp.stores.events import record_event
from memapp.stores.flags import get_flag, get_flags
from memapp.stores.locks import data_dir_lock
from memapp.stores.models import Project, Store
from memapp.stores.projects import REPO_SLUG_RE, find_project, managed_store_dir
from teamsync.engine import checksum, read_store, store_checksums
from teamsync.models import StoreSyncState, TeamConflict, Tombstone

ORGANIZATION_ID = "memhub"

_SLUG = REPO_SLUG_RE  # `owner/repo` that stays inside the shared repository (see its comment)


def store_checksum(entry_checksums: dict[str, str]) -> str:
    """`sha256:` of the sorted `key NUL entry-checksum` pairs, one per line (renames change it)."""
    digest = hashlib.sha256()
    for key in sorted(entry_checksums):
        digest.update(f"{key}\0{entry_checksums[key]}\n".encode())
    return "sha256:" + digest.hexdigest()


def _error(status_code: int, code: str, message: str, **details) -> Response:
    return Response(error_body(code, message, {"error_code": code, **details}), status=status_code)


def _repo_slug(request: Request) -> str | None:
    slug = request.query_params.get("repo", "")
    return slug if _SLUG.fullmatch(slug) else None


def _find_team_store(request: Request, slug: str, *, for_put: bool) -> Store | None:
    """The project's team store; None when a PUT may create it. Raises Http404 for an unknown
    repo, a repo the user is no member of, and (GET) a repo without a team store."""
    user = request.user
    project = find_project(slug)
    if project is None:
        allowed = user.is_staff or get_flag("protocol_project_creation") == "everyone"
        if not (for_put and allowed and get_flag("team_memory")):
            raise Http404
        return None
    if not project.members.filter(pk=user.pk).exists() or not get_flag("team_memory", project):
        raise Http404
    store = project.stores.filter(kind=Store.Kind.TEAM, mount="").first()
    if store is None and not for_put:
        raise Http404
    return store


def _create_team_store(user, slug: str) -> Store:
    """The managed team store a PUT writes to, with its project (the user as first member)
    when memhub does not know the repo yet."""
    project = find_project(slug)
    if project is None:
        project = Project.objects.create(key=slug, repo_slug=slug)
        project.members.add(user)
    path = managed_store_dir(project, Store.Kind.TEAM)
    path.mkdir(parents=True, exist_ok=True)
    return Store.objects.create(
        kind=Store.Kind.TEAM, origin=Store.Origin.MANAGED, path=str(path), project=project
    )


def _put_lock(slug: str) -> AbstractContextManager[None]:
    """One PUT per repo at a time, so If-Match is checked against what the write replaces."""
    return data_dir_lock(slug, prefix="protocol-")


def _checksums(store: Store) -> dict[str, str]:
    return store_checksums(Path(store.path), tuple(store.exclude))


def _meta(store: Store, sums: dict[str, str]) -> dict:
    state = StoreSyncState.objects.get_or_create(store=store)[0]
    return {
        "organizationId": ORGANIZATION_ID,
        "repo": store.project.repo_slug or store.project.key,
        "version": state.version,
        "lastModified": state.last_modified.isoformat().replace("+00:00", "Z"),
        "checksum": store_checksum(sums),
    }


_PARAMETERS = [
    OpenApiParameter("repo", str, required=True, description="owner/repo"),
    OpenApiParameter("view", str, enum=["hashes"], description="checksums only"),
]
_RESPONSES = {code: OpenApiTypes.OBJECT for code in (200, 304, 400, 404, 412, 413, 422)}


@extend_schema(
    methods=["GET"],
    operation_id="getTeamMemory",
    summary="Pull a repository's team memory (Claude Code's protocol)",
    tags=["team memory"],
    parameters=_PARAMETERS,
    responses=_RESPONSES,
)
@extend_schema(
    methods=["PUT"],
    operation_id="putTeamMemory",
    summary="Push entries to a repository's team memory (Claude Code's protocol)",
    tags=["team memory"],
    parameters=_PARAMETERS,
    request=OpenApiTypes.OBJECT,
    examples=[examples.PUT_TEAM_MEMORY],
    responses=_RESPONSES,
)
@api_view(["GET", "PUT"])
def team_memory(request: Request) -> Response:
    if request.method == "PUT":
        return _put(request)
    slug = _repo_slug(request)
    if slug is None:
        return _error(400, "invalid_repo", "repo must be an owner/repo slug.")
    store = _find_team_store(request, slug, for_put=False)
    if request.query_params.get("view") == "hashes":
        files, sums = None, _checksums(store)
    else:
        files = read_store(Path(store.path), tuple(store.exclude))
        sums = {key: checksum(data) for key, data in files.items()}
    if not sums:
        raise Http404
    meta = _meta(store, sums)
    headers = {"ETag": f'"{meta["checksum"]}"'}
    if etag_value(request.headers.get("If-None-Match")) == meta["checksum"]:
        return Response(status=status.HTTP_304_NOT_MODIFIED, headers=headers)
    content = {"entryChecksums": sums}
    if files is not None:
        entries = {key: data.decode("utf-8", "replace") for key, data in files.items()}
        content = {"entries": entries, **content}
    return Response({**meta, "content": content}, headers=headers)


def _put(request: Request) -> Response:
    body = request.data
    if (
        not isinstance(body, dict)
        or set(body) != {"entries"}
        or not isinstance(body["entries"], dict)
    ):
        return _error(400, "bad_request", 'The body must be {"entries": {key: text}}.')
    entries = body["entries"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in entries.items()):
        return _error(400, "bad_request", "Every entry must map a key to text.")
    slug = _repo_slug(request)
    if slug is None:
        return _error(400, "invalid_repo", "repo must be an owner/repo slug.")
    with _put_lock(slug):
        store = _find_team_store(request, slug, for_put=True)
        if store is None:  # checked as the store it would be; created once all is well
            project = find_project(slug)
            path = managed_store_dir(project or Project(key=slug), Store.Kind.TEAM)
            store = Store(kind=Store.Kind.TEAM, path=str(path), project=project)
        sums = _checksums(store) if store.pk else {}
        refusal = _refusal(request, store, entries, sums)
        if refusal is not None:
            return refusal
        if store.pk is None:
            store = _create_team_store(request.user, slug)
        tombstoned = list(Tombstone.objects.filter(store=store, key__in=list(entries)))
        held = {tomb.key for tomb in tombstoned}
        upserts = {k: v for k, v in entries.items() if k not in held}
        # Per-key preconditions too, checked under the store's own lock: a UI or API write
        # that lands after the snapshot is not overwritten.
        expected = {k: sums[k] for k in upserts if k in sums}
        try:
            do_put_files(store, request.user, upserts, if_match=expected, via="protocol")
        except FileRejected as exc:
            return _rejected(exc, store)
        _hold_resurrections(store, request.user, tombstoned, entries)
        sums = _checksums(store)
        return Response({**_meta(store, sums), "held": sorted(held)})


def _refusal(
    request: Request, store: Store, entries: dict[str, str], sums: dict[str, str]
) -> Response | None:
    """Why the PUT must not be applied at all (an error response), or None."""
    current = store_checksum(sums)
    if_match = etag_value(request.headers.get("If-Match"))
    if if_match is not None and if_match != current:
        return _error(
            412, "precondition_failed", "The team memory changed; fetch it again.", checksum=current
        )
    flags = get_flags(store.project)
    for key, text in entries.items():
        try:
            store_file_path(store, key)
            data = text.encode("utf-8")
        except FileRejected as exc:
            return Response(error_body(exc.code, str(exc), exc.details), status=exc.status)
        except UnicodeEncodeError:
            return _error(400, "invalid_utf8", f"{key!r} is not valid UTF-8.", key=key)
        if "\0" in text:
            return _error(400, "binary_content", f"{key!r} contains NUL bytes.", key=key)
        if len(data) > flags["team_max_entry_bytes"]:
            return _error(
                413,
                "entry_too_large",
                f"{key!r} is {len(data):,} bytes.",
                key=key,
                max_bytes=flags["team_max_entry_bytes"],
            )
    topics = [k for k in set(sums) | set(entries) if Path(k).name != "MEMORY.md"]
    if len(topics) > flags["team_max_entries"]:
        return _error(
            413,
            "team_memory_too_many_entries",
            "Too many team memory entries.",
            max_entries=flags["team_max_entries"],
            received_entries=len(topics),
        )
    # Both layers of docs/design.md §10a: what the protocol accepts is served to every member at
    # once, so a file the push gate would quarantine must not get in either.
    blocked = scan_for_push(entries)
    if blocked:
        hits = [
            {"key": key, "rule_id": hit.rule_id, "label": hit.label, "line": hit.line}
            for key in sorted(blocked)
            for hit in blocked[key]
        ]
        return _error(422, "team_memory_secret_detected", "Refused: secrets found.", entries=hits)
    return None


def _rejected(exc: FileRejected, store: Store) -> Response:
    if exc.code == "precondition_failed":
        current = store_checksum(_checksums(store))
        return _error(
            412, "precondition_failed", "The team memory changed; fetch it again.", checksum=current
        )
    if exc.code == "secret_detected":
        return _error(422, "team_memory_secret_detected", "Refused: secrets found.", **exc.details)
    return Response(error_body(exc.code, str(exc), exc.details), status=exc.status)


def _hold_resurrections(
    store: Store, user, tombstones: list[Tombstone], entries: dict[str, str]
) -> None:
    """Keys deleted in memhub that a client sends again: each is held as an open `resurrect`
    conflict (updated with the latest text) for a person to resolve; a text the person already
    refused is held without asking again. Resolving it with the client's text commits the key,
    which removes its tombstone."""
    for tomb in tombstones:
        text = entries[tomb.key]
        conflicts = TeamConflict.objects.filter(
            store=store, key=tomb.key, kind=TeamConflict.Kind.RESURRECT
        )
        open_conflict = conflicts.filter(resolved_at__isnull=True).first()
        if open_conflict is not None:
            if open_conflict.theirs != text:
                open_conflict.theirs = text
                open_conflict.save(update_fields=["theirs"])
            continue
        if conflicts.filter(resolved_at__gte=tomb.deleted_at, theirs=text).exists():
            continue
        TeamConflict.objects.create(
            store=store, key=tomb.key, kind=TeamConflict.Kind.RESURRECT, ours=None, theirs=text
        )
        record_event("conflict", store=store, user=user, path=tomb.key, reason="resurrect")
