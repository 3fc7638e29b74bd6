"""What an agent's SessionStart hook needs from memhub, in one request (docs/design.md §16).

A hook has well under a second, so one answer carries all of it: the private store's files
that differ from the agent's copy (so an approved change made on the server reaches the next
session before the agent reads its memory dir), the team index when the agent has no team
memory of its own, and what waits for the person's review (the registry of
`memapp.stores.waiting`, the same the navigation's badges read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.http import Http404

from memapp.memdir.store_files import (
    MAX_ENTRY_BYTES,
    checksum,
    read_store_file,
    store_checksums,
    walk_store,
)
from memapp.stores.models import Store
from memapp.stores.projects import find_project, resolve_store
from memapp.stores.prompting import team_index_for
from memapp.stores.waiting import Waiting, waiting_for, waiting_notice

# Content sent with one answer; past it the rest waits for `memhub-agent sync` (or the next
# session), so a hook never waits on a big first download.
MAX_PULL_BYTES = 512 * 1024


@dataclass
class SessionStart:
    store: int | None  # the user's private store of the project; None when there is none yet
    checksums: dict[str, str] = field(default_factory=dict)  # every file of that store
    files: dict[str, str] = field(default_factory=dict)  # those that differ from the agent's
    mtimes: dict[str, int] = field(default_factory=dict)  # theirs, in ms: the memories' ages
    partial: bool = False  # some differing files were left out (size)
    team_index: str = ""
    waiting: list[Waiting] = field(default_factory=list)
    notice: str = ""


def _private_store(user, project_ref: str, alias: str) -> Store | None:
    try:
        return resolve_store(user, project_ref, Store.Kind.PRIVATE, alias=alias, create=False)
    except Http404:
        return None


def _differing_files(
    store: Store, checksums: dict[str, str], have: dict[str, str]
) -> tuple[dict[str, str], dict[str, int], bool]:
    """The text of each file whose checksum differs from `have`, read now (its checksum in
    `checksums` is updated to what was read), within MAX_PULL_BYTES, and its mtime in ms; and
    whether any was left out. A file that is not UTF-8 text, or is too large, cannot be
    written faithfully by the agent and is not sent.

    Which files fit is planned from their sizes (a walk of stats, in key order), so an agent
    with none of the files costs the reading of MAX_PULL_BYTES, not of the whole store."""
    differ = {key for key, known in checksums.items() if have.get(key) != known}
    if not differ:
        return {}, {}, False
    sizes = {
        found.key: found.stat.st_size
        for found in walk_store(store.path, store.exclude)
        if found.key in differ
    }
    chosen: set[str] = set()
    total, partial = 0, False
    for key in sorted(sizes):
        if sizes[key] > MAX_ENTRY_BYTES:
            continue
        if total + sizes[key] > MAX_PULL_BYTES:
            partial = True
            continue
        chosen.add(key)
        total += sizes[key]
    files: dict[str, str] = {}
    mtimes: dict[str, int] = {}
    total = 0
    for found in walk_store(store.path, store.exclude):
        if found.key not in chosen:
            continue
        data = read_store_file(found)
        try:
            text = data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            text = None
        if data is None or text is None:
            continue
        checksums[found.key] = checksum(data)  # the mirror may be a moment behind the disk
        if len(data) > MAX_ENTRY_BYTES or checksums[found.key] == have.get(found.key):
            continue
        if total + len(data) > MAX_PULL_BYTES:  # it grew since the walk of sizes
            partial = True
            continue
        files[found.key] = text
        mtimes[found.key] = found.stat.st_mtime_ns // 1_000_000
        total += len(data)
    return dict(sorted(files.items())), mtimes, partial


def session_start_for(
    user,
    project_ref: str,
    *,
    alias: str = "",
    memory_dir: str | None = None,
    have: dict[str, str] | None = None,
    team_index: bool = True,
    site_url: str = "",
) -> SessionStart:
    """The session-start answer for `user` in a project. Nothing is created or changed: a
    project or store memhub does not know yet is simply not pulled from. `have` is the agent's
    checksum of each file it holds; `team_index` false leaves the team index out (the agent
    has team memory of its own); `site_url` is where the person reviews."""
    private = _private_store(user, project_ref, alias)
    project = (
        private.project
        if private is not None
        else find_project(project_ref) or (find_project(alias) if alias else None)
    )
    if private is not None and not Path(private.path).is_dir():
        private = None  # a directory gone missing (a volume not mounted) is no empty store
    answer = SessionStart(store=private.pk if private is not None else None)
    if private is not None:
        answer.checksums = store_checksums(private.path, private.exclude)
        answer.files, answer.mtimes, answer.partial = _differing_files(
            private, answer.checksums, have or {}
        )
    if team_index and project is not None:
        answer.team_index = team_index_for(user, project, memory_dir)
    answer.waiting = waiting_for(user)
    answer.notice = waiting_notice(answer.waiting, site_url)
    return answer
