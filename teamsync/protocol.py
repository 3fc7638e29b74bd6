"""The team memory protocol of Claude Code's client (DESIGN §10, §15), served by memhub.

`/api/claude_code/team_memory?repo=owner%2Frepo` with memhub API tokens as Bearer tokens. A PUT
is an upsert through the same write path as every other change (so it becomes a commit authored
by the token's user); a key deleted in memhub and re-uploaded by a client that has not seen the
deletion is held as a conflict for review instead of coming back to life.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.http import Http404
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.actions import FileRejected, do_put_files, store_file_path
from memapp.api.errors import error_body
from memapp.flags import get_flag, get_flags
from memapp.models import Project, Store
from memapp.projects import find_project, managed_store_dir
from teamsync.engine import checksum, read_store
from teamsync.models import StoreSyncState, TeamConflict, Tombstone

ORGANIZATION_ID = "memhub"


def store_checksum(entry_checksums: dict[str, str]) -> str:
    """`sha256:` of the sorted `key NUL entry-checksum` pairs, one per line (renames change it)."""
    digest = hashlib.sha256()
    for key in sorted(entry_checksums):
        digest.update(f"{key}\0{entry_checksums[key]}\n".encode())
    return "sha256:" + digest.hexdigest()


def _precondition(value: str | None) -> str | None:
    return value.strip().removeprefix("W/").strip('"') if value else None


def _team_store(request: Request, create: bool) -> Store:
    slug = request.query_params.get("repo", "")
    if not slug:
        raise Http404
    project = find_project(slug)
    user = request.user
    if project is None:
        allowed = user.is_staff or get_flag("protocol_project_creation") == "everyone"
        if not (create and allowed):
            raise Http404
        project = Project.objects.create(key=slug, repo_slug=slug)
        project.members.add(user)
    elif not project.members.filter(pk=user.pk).exists():
        raise Http404
    if not get_flag("team_memory", project):
        raise Http404
    store = project.stores.filter(kind=Store.Kind.TEAM, mount="").first()
    if store is None:
        if not create:
            raise Http404
        path = managed_store_dir(project, Store.Kind.TEAM)
        path.mkdir(parents=True, exist_ok=True)
        store = Store.objects.create(
            kind=Store.Kind.TEAM, origin=Store.Origin.MANAGED, path=str(path), project=project
        )
    return store


def _snapshot(store: Store) -> tuple[dict[str, str], dict[str, str]]:
    files = read_store(Path(store.path), tuple(store.exclude))
    entries = {key: data.decode("utf-8", "replace") for key, data in files.items()}
    return entries, {key: checksum(data) for key, data in files.items()}


def _meta(store: Store, sums: dict[str, str]) -> dict:
    state = StoreSyncState.objects.get_or_create(store=store)[0]
    return {
        "organizationId": ORGANIZATION_ID,
        "repo": store.project.repo_slug or store.project.key,
        "version": state.version,
        "lastModified": state.last_modified.isoformat().replace("+00:00", "Z"),
        "checksum": store_checksum(sums),
    }


def _error(status_code: int, code: str, message: str, **details) -> Response:
    return Response(error_body(code, message, {"error_code": code, **details}), status=status_code)


@api_view(["GET", "PUT"])
def team_memory(request: Request) -> Response:
    if request.method == "GET":
        store = _team_store(request, create=False)
        entries, sums = _snapshot(store)
        if not entries:
            raise Http404
        meta = _meta(store, sums)
        headers = {"ETag": f'"{meta["checksum"]}"'}
        if _precondition(request.headers.get("If-None-Match")) == meta["checksum"]:
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers=headers)
        content = {"entryChecksums": sums}
        if request.query_params.get("view") != "hashes":
            content = {"entries": entries, **content}
        return Response({**meta, "content": content}, headers=headers)
    return _put(request)


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
    store = _team_store(request, create=True)
    _, sums = _snapshot(store)
    current = store_checksum(sums)
    if_match = _precondition(request.headers.get("If-Match"))
    if if_match is not None and if_match != current:
        return _error(
            412, "precondition_failed", "The team memory changed; fetch it again.", checksum=current
        )
    flags = get_flags(store.project)
    for key, text in entries.items():
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > flags["team_max_entry_bytes"]:
            return _error(
                413,
                "entry_too_large",
                f"{key!r} is {size:,} bytes.",
                key=key,
                max_bytes=flags["team_max_entry_bytes"],
            )
    merged = set(sums) | set(entries)
    topics = [k for k in merged if Path(k).name != "MEMORY.md"]
    if len(topics) > flags["team_max_entries"]:
        return _error(
            413,
            "team_memory_too_many_entries",
            "Too many team memory entries.",
            max_entries=flags["team_max_entries"],
            received_entries=len(topics),
        )
    held = _hold_resurrections(store, entries, if_match == current)
    upserts = {k: v for k, v in entries.items() if k not in held}
    try:
        for key in upserts:
            store_file_path(store, key)
        do_put_files(store, request.user, upserts, via="protocol")
    except FileRejected as exc:
        if exc.code == "secret_detected":
            return _error(
                422,
                "team_memory_secret_detected",
                "Refused: secrets found.",
                entries=exc.details["entries"],
            )
        return Response(error_body(exc.code, str(exc), exc.details), status=exc.status)
    _, sums = _snapshot(store)
    return Response({**_meta(store, sums), "held": sorted(held)})


def _hold_resurrections(store: Store, entries: dict[str, str], saw_latest: bool) -> set[str]:
    """Keys deleted in memhub that a client which has not seen the deletion sends again."""
    if saw_latest:
        Tombstone.objects.filter(store=store, key__in=list(entries)).delete()
        return set()
    held = set()
    for tomb in Tombstone.objects.filter(store=store, key__in=list(entries)):
        TeamConflict.objects.get_or_create(
            store=store,
            key=tomb.key,
            kind=TeamConflict.Kind.RESURRECT,
            resolved_at=None,
            defaults={"ours": None, "theirs": entries[tomb.key]},
        )
        held.add(tomb.key)
    return held
