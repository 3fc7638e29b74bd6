"""Team sync for memhub: stores, flags, events and the worker around the git engine.

Every change memhub makes to a team store is committed to the working clone at once, authored
by the user who made it (`do_commit_team_change`); publishing is left to `do_sync_team`, which the
background worker runs about two seconds after the last change and every sync interval.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memapp.memdir.atomic import delete_file, write_atomic_bytes
from memapp.memdir.deletions import too_many_deletions
from memapp.memdir.index import delete_index_entry, merge_index
from memapp.memdir.keys import validate_key
from memapp.memdir.secret_gate import configure as configure_secret_gate
from memapp.memdir.secret_gate import scan_for_push
from memapp.memdir.store_files import walk_store
from memapp.stores.actions import do_forget_memories, do_put_files
from memapp.stores.discovery import local_owner
from memapp.stores.events import record_event
from memapp.stores.flags import get_flag, get_flags
from memapp.stores.history import (
    capture_before_write,
    is_topic,
    is_versioned,
    read_index_bytes,
    record_changes,
    record_index,
)
from memapp.stores.locks import store_lock
from memapp.stores.mirror import Parsed, parse_written, rescan_store
from memapp.stores.models import Store, Via
from teamsync.engine import (
    INDEX_FILENAME,
    MAX_PUSH_ATTEMPTS,
    CommitResult,
    Conflict,
    IncomingResult,
    StoreSpec,
    TeamClone,
    checksum,
    init_bare_remote,
    is_permanent,
    union_lines,
    with_local_entries,
)
from teamsync.models import (
    BlockedFile,
    HeldDeletion,
    StoreSyncState,
    TeamConflict,
    TeamSyncStatus,
    Tombstone,
)


def team_remote() -> str:
    return settings.MEMHUB_TEAM_REMOTE or str(settings.MEMHUB_DATA_DIR / "team-remote.git")


def team_remote_display() -> str:
    """The remote as it may be shown or logged: no user part (`https://user:token@…` or a
    token as the user name) from a URL."""
    return re.sub(r"(://)[^/@\s]*@", r"\1", team_remote())


def _clone_dir() -> Path:
    return settings.MEMHUB_DATA_DIR / "team-clone"


def team_clone() -> TeamClone:
    remote = team_remote()
    if not settings.MEMHUB_TEAM_REMOTE:
        init_bare_remote(Path(remote))
    return TeamClone(_clone_dir(), remote)


def in_shared_repository(name: str) -> bool:
    """Whether the shared repository (as last synced) has a folder `name`: a project of that
    name exists outside this memhub, so only staff may claim it (docs/design.md §17)."""
    return TeamClone(_clone_dir(), team_remote()).has_folder(name)


def folder_for(store: Store) -> str:
    """The store's folder in the shared repository: `owner/repo` (or the project key)."""
    project = store.project
    base = project.repo_slug or project.key
    return f"{base}/{store.mount}" if store.mount else base


def team_stores():
    return Store.objects.filter(kind=Store.Kind.TEAM, project__isnull=False).select_related(
        "project"
    )


def _author(user) -> tuple[str, str]:
    if user is None:
        return ("memhub", "memhub@localhost")
    name = user.get_full_name() or user.get_username()
    return (name, user.email or f"{user.get_username()}@memhub.local")


def _state(store: Store) -> StoreSyncState:
    return StoreSyncState.objects.get_or_create(store=store)[0]


def _spec(store: Store, state: StoreSyncState) -> StoreSpec:
    held = set(store.conflicts.filter(resolved_at__isnull=True).values_list("key", flat=True))
    for keys in store.held_deletions.filter(decided_at__isnull=True).values_list("keys", flat=True):
        held.update(keys)
    return StoreSpec(
        folder=folder_for(store),
        directory=Path(store.path),
        base=state.base,
        exclude=tuple(store.exclude),
        held=frozenset(held),
    )


def _follow_folder(clone: TeamClone, store: Store, state: StoreSyncState, *, online: bool) -> bool:
    """Move the store's folder in the shared repository when its name changed (a new slug,
    a renamed mount; docs/design.md §17), checked against what the remote holds there, so
    only a sync (`online`) moves. False while it is not moved: the store then waits, since
    syncing it under the new name would read every file as deleted."""
    folder = folder_for(store)
    if state.folder == folder and not state.move_error:
        return True
    if not state.folder:  # first sync, or synced before memhub remembered folders
        state.folder = folder
        state.save(update_fields=["folder"])
        return True
    if not online:
        request_sync()
        return False
    if clone.fetch() is not None:
        return False  # the remote cannot say what the new folder holds: the next sync moves
    author = local_owner() if store.origin == Store.Origin.DISCOVERED else None
    clashes = clone.move_folder(state.folder, _spec(store, state), _author(author))
    if clashes:
        error = (
            f"Team sync cannot move {state.folder} to {folder}: {folder} in the shared "
            f"repository already holds other versions of {', '.join(clashes[:5])}. Nothing of "
            "this store is synced until its old name is set back or those files are moved."
        )
        if state.move_error != error:
            state.move_error = error
            state.save(update_fields=["move_error"])
            record_event("folder_moved", store=store, old=state.folder, new=folder, error=error)
        return False
    record_event("folder_moved", store=store, old=state.folder, new=folder, error="")
    state.folder, state.move_error = folder, ""
    state.save(update_fields=["folder", "move_error"])
    return True


def _hits(hits) -> list[dict]:
    return [{"rule_id": h.rule_id, "label": h.label, "line": h.line} for h in hits]


def _blocked_reason(result: CommitResult, key: str) -> BlockedFile.Reason:
    if key in result.too_large:
        return BlockedFile.Reason.TOO_LARGE
    if key in result.invalid:
        return BlockedFile.Reason.INVALID
    return BlockedFile.Reason.SECRET


def _commit(
    clone: TeamClone, store: Store, user, keys: set[str] | None, *, online: bool = False
) -> CommitResult:
    """Commit a store's local changes; record blocked files, caps and events."""
    flags = get_flags(store.project)
    # The admin's global choice, applied before each gate (a no-op unless it changed).
    configure_secret_gate(entropy=flags["secrets_entropy_plugins"])
    state = _state(store)
    if not _follow_folder(clone, store, state, online=online):
        return CommitResult(base=dict(state.base))
    if online and keys is None:
        _guard_outgoing(store, state)
    known = {b.key: (b.reason, b.hits) for b in BlockedFile.objects.filter(store=store)}
    result = clone.commit_local(
        _spec(store, state),
        _author(user),
        secret_check=scan_for_push,
        max_entries=flags["team_max_entries"],
        max_entry_bytes=flags["team_max_entry_bytes"],
        keys=keys,
    )
    with transaction.atomic():
        for key, hits in result.blocked.items():
            reason = _blocked_reason(result, key)
            BlockedFile.objects.update_or_create(
                store=store, key=key, defaults={"reason": reason, "hits": _hits(hits)}
            )
        for key in result.capped:
            BlockedFile.objects.update_or_create(
                store=store, key=key, defaults={"reason": BlockedFile.Reason.CAPPED, "hits": []}
            )
        # Unblocked: committed, deleted, reverted, or fixed. Only the keys looked at count.
        stale = BlockedFile.objects.filter(store=store).exclude(
            key__in=[*result.blocked, *result.capped]
        )
        (stale if keys is None else stale.filter(key__in=keys)).delete()
        for key in result.deleted:
            Tombstone.objects.update_or_create(
                store=store, key=key, defaults={"checksum": state.base.get(key, "")}
            )
        Tombstone.objects.filter(store=store, key__in=result.committed).delete()
        if result.committed or result.deleted:
            state.base = result.base
            state.version += 1
            state.last_modified = timezone.now()
            state.save(update_fields=["base", "version", "last_modified"])
            _changed()
    for conflict in result.conflicts:  # changed here while a merge changed it in the clone
        _record_conflict(store, conflict.path.removeprefix(folder_for(store) + "/"), conflict)
    secret_keys = [
        k for k in result.blocked if _blocked_reason(result, k) == BlockedFile.Reason.SECRET
    ]
    # Reported when something is newly blocked, not again on every sync while it stays so.
    fresh_secrets = any(
        known.get(k) != (BlockedFile.Reason.SECRET, _hits(result.blocked[k])) for k in secret_keys
    )
    fresh_capped = any(known.get(k, ("",))[0] != BlockedFile.Reason.CAPPED for k in result.capped)
    if fresh_secrets:
        rule_ids = sorted({h.rule_id for k in secret_keys for h in result.blocked[k]})
        record_event("secret_skipped", store=store, file_count=len(secret_keys), rule_ids=rule_ids)
    if fresh_capped:
        record_event(
            "entries_capped",
            store=store,
            total_entries=result.total_entries + len(result.capped),
            dropped_count=len(result.capped),
            max_entries=flags["team_max_entries"],
        )
    return result


def do_commit_team_change(store: Store, user, keys: set[str] | None = None) -> CommitResult | None:
    """Commit what a user just changed in a team store (local and fast; no network)."""
    if store.kind != Store.Kind.TEAM or store.project is None:
        return None
    if not get_flag("team_memory", store.project):
        return None
    clone = team_clone()
    with clone.locked():
        clone.ensure(fetch=False)  # a web request never waits on the network
        return _commit(clone, store, user, keys)


@dataclass
class SyncReport:
    committed: int = 0
    written: int = 0
    deleted: int = 0
    conflicts: list[Conflict] = field(default_factory=list)
    pushed: bool = False
    uploaded: int = 0  # memory files the pushed commits changed
    push_attempts: int = 0
    error: str | None = None
    suppressed: bool = False
    duration_ms: int = 0
    authors: set[str] = field(default_factory=set)  # who made the changes pulled


def _store_for_path(stores: list[Store], path: str) -> tuple[Store, str] | None:
    """Map a repository path to the team store whose folder holds it (the longest match)."""
    best = None
    for store in stores:
        folder = folder_for(store) + "/"
        if path.startswith(folder) and (best is None or len(folder) > len(best[2])):
            best = (store, path[len(folder) :], folder)
    return (best[0], best[1]) if best else None


def _record_conflict(store: Store, key: str, conflict: Conflict) -> None:
    TeamConflict.objects.create(
        store=store,
        key=key,
        kind=conflict.kind,
        base=conflict.base,
        ours=conflict.ours,
        theirs=conflict.theirs,
    )
    record_event("conflict", store=store, path=key, reason=conflict.kind)


def _integrate(clone: TeamClone, stores: list[Store], report: SyncReport) -> None:
    """Fetch and merge the remote, then bring every store up to date with its folder."""
    error = clone.fetch()
    if error:
        report.error = error
        report.suppressed = is_permanent(error)  # no repository there: pushing cannot work
        return
    merged = clone.integrate()
    for conflict in merged.conflicts:
        found = _store_for_path(stores, conflict.path)
        if found is None:
            continue
        store, key = found
        _record_conflict(store, key, conflict)
        report.conflicts.append(conflict)
    for store in stores:
        # The store's own lock: a write through the UI or API waits instead of landing
        # between what apply read and what it writes (which it would overwrite).
        state = _state(store)
        if state.move_error or (state.folder and state.folder != folder_for(store)):
            continue  # its folder is not moved yet (see _follow_folder): nothing to apply

        with store_lock(store):
            if merged.merged:
                rescan_store(store)  # what changed on disk since goes into its history first
            spec = _spec(store, state)
            gone = clone.incoming_deletions(spec)
            # One deletion is never held: the store is walked for its count only for more.
            if len(gone) > 1 and too_many_deletions(len(gone), total := _topic_count(store)):
                _hold_deletions(store, gone, total, outgoing=False)
                spec = _spec(store, state)
            applied, written = _apply_incoming(clone, store, spec)
            by_author = _record_incoming(clone, store, applied, report, merged.before)
            if applied.base != state.base:
                changed = bool(applied.written or applied.deleted)
                state.base = applied.base
                state.version += 1 if changed else 0
                state.last_modified = timezone.now() if changed else state.last_modified
                state.save(update_fields=["base", "version", "last_modified"])
            if applied.written or applied.deleted:
                rescan_store(store, written)  # every file written is in its history now
                _record_files_changed(store, by_author)
        report.written += len(applied.written)
        report.deleted += len(applied.deleted)


def _apply_incoming(
    clone: TeamClone, store: Store, spec: StoreSpec
) -> tuple[IncomingResult, dict[str, tuple[Parsed, os.stat_result]]]:
    """`apply_incoming`, the topic files it writes parsed for the mirror while their writes
    wait on the disk; returns them with the stat each write left, for `rescan_store`."""
    parsed: dict[str, Parsed] = {}
    applied = clone.apply_incoming(
        spec, lambda result: parsed.update(parse_written(store, result.contents))
    )
    return applied, {key: (parsed[key], applied.stats[key]) for key in parsed}


def _topic_count(store: Store) -> int:
    return sum(1 for found in walk_store(store.path, store.exclude) if is_topic(found.key))


def _hold_deletions(store: Store, keys: list[str], total: int, *, outgoing: bool) -> None:
    """Keep `keys` out of sync (in the store, and in the shared repository) until a person
    decides on the Team sync page."""
    HeldDeletion.objects.create(store=store, keys=keys, total=total, outgoing=outgoing)
    record_event("deletions_held", store=store, file_count=len(keys), paths=keys[:20])


def _guard_outgoing(store: Store, state: StoreSyncState) -> None:
    """Files gone from a store's directory behind memhub's back (a directory emptied, a
    checkout switched) are deleted from the shared repository only if few."""
    present = {found.key for found in walk_store(store.path, store.exclude)}
    held = _spec(store, state).held
    gone = sorted(k for k in state.base if is_topic(k) and k not in present and k not in held)
    total = sum(1 for key in state.base if is_topic(key))
    if too_many_deletions(len(gone), total):
        _hold_deletions(store, gone, total, outgoing=True)


def do_decide_deletions(held: HeldDeletion, user, *, delete: bool) -> None:
    """A person's answer to held deletions: delete the files from the store (to its Trash,
    their index lines with them), or keep them, which puts them back in the shared
    repository. A second answer (another tab) changes nothing."""
    decision = HeldDeletion.Decision.DELETED if delete else HeldDeletion.Decision.KEPT
    decided = HeldDeletion.objects.filter(pk=held.pk, decided_at__isnull=True).update(
        decided_at=timezone.now(), decided_by=user, decision=decision
    )
    if not decided:
        return
    store = held.store
    if held.outgoing and delete:
        do_commit_team_change(store, user, set(held.keys))
    elif held.outgoing:
        _restore_from_clone(store, user, held.keys)
    elif delete:
        do_forget_memories(store, user, list(held.keys), via=Via.UI)
    else:
        clone = team_clone()
        with clone.locked():
            clone.ensure(fetch=False)
            with store_lock(store):
                state = _state(store)
                flags = get_flags(store.project)
                configure_secret_gate(entropy=flags["secrets_entropy_plugins"])
                restored = clone.restore_files(
                    _spec(store, state),
                    held.keys,
                    _author(user),
                    secret_check=scan_for_push,
                    max_entry_bytes=flags["team_max_entry_bytes"],
                )
                # Gone from the repository: one kept back is a new file to the next commit,
                # which gates it again (and shares it once fixed).
                for key in held.keys:
                    state.base.pop(key, None)
                state.base.update(restored)
                state.save(update_fields=["base"])
    request_sync()


def _restore_from_clone(store: Store, user, keys: list[str]) -> None:
    """Write back into the store the shared repository's version of `keys`, with their index
    lines, through the ordinary write path."""
    clone = team_clone()
    with clone.locked():
        shared = clone.folder_files(folder_for(store))
    files = {key: shared[key].decode("utf-8") for key in keys if key in shared}
    if INDEX_FILENAME in shared:
        index = Path(store.path) / INDEX_FILENAME
        mine = index.read_bytes() if index.is_file() else b""
        files[INDEX_FILENAME] = union_lines(mine, shared[INDEX_FILENAME]).decode("utf-8")
    note = "kept: team sync would have deleted it from the shared repository"
    do_put_files(store, user, files, via=Via.UI, note=note)


def _record_incoming(
    clone: TeamClone, store: Store, applied, report: SyncReport, before: str | None
) -> dict[str, tuple[dict, dict]]:
    """Each file a pull wrote or deleted is a version by team sync, noting who made it
    (before the mirror's rescan, which would record them as found on disk); `before`: the
    clone's commit before the merge. Returns what was written and deleted, by author."""
    folder = folder_for(store)
    keys = [*applied.written, *applied.deleted]
    paths = [f"{folder}/{key}" for key in keys if is_versioned(key)]
    authors = clone.last_authors(paths, since=before)
    by_author: dict[str, tuple[dict, dict]] = {}
    for key in keys:
        author = authors.get(f"{folder}/{key}", "")
        written, deleted = by_author.setdefault(author, ({}, {}))
        if key in applied.contents:
            written[key] = applied.contents[key]
        else:
            deleted[key] = None
    for author, (written, deleted) in by_author.items():
        note = f"from {author}" if author else ""
        record_changes(store, written, deleted, via=Via.TEAM_SYNC, note=note)
        if author:
            report.authors.add(author)
    return by_author


def _record_files_changed(store: Store, by_author: dict[str, tuple[dict, dict]]) -> None:
    """One `team_sync_changed` event per store and pull, naming the memories it wrote and
    the ones it moved to the Trash, so Home and Events can tell people (and offer undo).
    The names are the mirror's (rescanned), not parsed again."""
    written = sorted(k for _, (w, _) in by_author.items() for k in w if is_topic(k))
    trashed = sorted(k for _, (_, d) in by_author.items() for k in d if is_topic(k))
    if not written and not trashed:
        return
    names = dict(store.files.filter(path__in=written).values_list("path", "name"))
    for item in store.trash.filter(path__in=trashed).order_by("deleted_at"):
        names[item.path] = item.name
    record_event(
        "team_sync_changed",
        store=store,
        written=written,
        trashed=trashed,
        names={key: name for key, name in names.items() if name},
        authors=sorted(a for a in by_author if a),
    )


def do_sync_team(*, push: bool = True) -> SyncReport:
    """One full sync: commit local changes, integrate the remote, update stores, publish."""
    started, began = time.monotonic(), timezone.now()
    report = SyncReport()
    status = TeamSyncStatus.get()
    stores = [s for s in team_stores() if get_flag("team_memory", s.project)]
    owner = local_owner()
    clone = team_clone()
    with clone.locked():
        clone.ensure()
        with clone.fetching():  # the remote answers while the local changes are committed
            for store in stores:
                author = owner if store.origin == Store.Origin.DISCOVERED else None
                result = _commit(clone, store, author, None, online=True)
                report.committed += len(result.committed) + len(result.deleted)
            _integrate(clone, stores, report)
        pull_error = report.error
        if push and not report.error and clone.unpushed():
            report.uploaded = clone.unpushed_files()
            _push(clone, stores, report)
    report.duration_ms = round((time.monotonic() - started) * 1000)
    _record(status, report, push, pull_error, began)
    return report


def _push(clone: TeamClone, stores: list[Store], report: SyncReport) -> None:
    for attempt in range(1, MAX_PUSH_ATTEMPTS + 1):
        report.push_attempts = attempt
        ok, error, permanent = clone.push_once()
        if ok:
            report.pushed = True
            report.error = None
            return
        report.error = error
        if permanent:
            report.suppressed = True
            return
        _integrate(clone, stores, report)  # someone pushed first: merge theirs, try again


def _record(
    status: TeamSyncStatus, report: SyncReport, push: bool, pull_error, started: datetime
) -> None:
    now = timezone.now()
    record_event(
        "sync_pull",
        success=pull_error is None,
        files_written=report.written + report.deleted,
        not_modified=report.written + report.deleted == 0,
        duration_ms=report.duration_ms,
        error=pull_error,
        authors=sorted(report.authors),
    )
    fields = {"last_pull_at": now, "last_error": report.error or ""}
    if push and (report.push_attempts or report.committed):
        record_event(
            "sync_push",
            success=report.pushed,
            files_uploaded=report.uploaded if report.pushed else 0,
            conflict=bool(report.conflicts),
            conflict_retries=max(0, report.push_attempts - 1),
            duration_ms=report.duration_ms,
            batches=report.push_attempts,
            error=report.error,
        )
    if report.pushed:
        fields.update(
            last_push_at=now, suppressed_reason="", suppressed_status="", suppressed_at=None
        )
    elif report.suppressed:
        if not status.suppressed_reason:
            record_event("push_suppressed", reason=report.error[:500], status="permanent")
        fields.update(
            suppressed_reason=report.error[:2000], suppressed_status="permanent", suppressed_at=now
        )
    rows = TeamSyncStatus.objects.filter(pk=status.pk)
    rows.update(**fields)
    # A request or a change made while this sync ran (after it committed) waits for the next.
    rows.filter(requested_at__lte=started).update(requested_at=None)
    if push and not report.error:  # published, or nothing was left to publish
        rows.filter(dirty_at__lte=started).update(dirty_at=None)


def request_sync() -> None:
    """'Sync now': the worker picks it up on its next tick (the web request does not wait)."""
    TeamSyncStatus.objects.filter(pk=TeamSyncStatus.get().pk).update(requested_at=timezone.now())


def sync_changed_on_disk(store: Store) -> None:
    """A team store's files changed behind memhub's back (an agent wrote them): a change to
    sync, as one made through memhub is (2 s after the last, failures' pauses kept), rather
    than at the next scheduled pull, so team sync judges them within seconds (a secret is
    kept back from every teammate and their agents) and shares the rest."""
    if store.kind == Store.Kind.TEAM:
        _changed()


def _changed() -> None:
    """A change to publish: the worker syncs 2 s after the last one (`scheduling.due`)."""
    TeamSyncStatus.objects.filter(pk=TeamSyncStatus.get().pk).update(dirty_at=timezone.now())


class AlreadyResolved(Exception):
    """The conflict was resolved meanwhile (another tab, another person): nothing was done."""

    def __init__(self, conflict: TeamConflict) -> None:
        who = conflict.resolved_by or "someone"
        when = timezone.localtime(conflict.resolved_at)
        super().__init__(
            f"{conflict.key} was already resolved by {who} at {when:%Y-%m-%d %H:%M}: kept "
            f"{conflict.resolution}. Your choice was not applied; nothing was lost, both sides "
            "are in the memory's history."
        )


def current_text(conflict: TeamConflict) -> str | None:
    """What the store holds now for the conflict's key (None: no such file): "ours" is this,
    not the text the conflict was recorded with, which later edits may have overtaken."""
    try:
        data = validate_key(Path(conflict.store.path), conflict.key).read_bytes()
    except FileNotFoundError:
        return None
    return data.decode("utf-8", "replace")


def suggested_merge(conflict: TeamConflict) -> str | None:
    """For an index, the two sides merged line by line (docs/design.md §5): what "Save the
    merge" offers to start from. None for a topic file (a person merges prose)."""
    ours = current_text(conflict)
    if Path(conflict.key).name != INDEX_FILENAME or ours is None or conflict.theirs is None:
        return None
    return merge_index(conflict.base or "", ours, conflict.theirs)


def do_resolve_conflict(conflict: TeamConflict, user, choice: str, text: str | None = None) -> None:
    """Settle a conflict: keep the store's current text ("ours"), theirs, a merged text, or
    delete the file; the result is committed like any other change and published by the next
    push. The side not kept is recorded in the memory's history first, so it stays restorable.
    Raises AlreadyResolved when it was settled meanwhile (nothing is done then)."""
    if choice not in ("ours", "theirs", "merged", "delete") or (
        choice == "merged" and text is None
    ):
        raise ValueError(f"unknown resolution {choice!r}")
    store = conflict.store
    clone = team_clone()
    with clone.locked():
        clone.ensure()
        with store_lock(store):
            conflict.refresh_from_db()
            if conflict.resolved_at is not None:
                raise AlreadyResolved(conflict)
            target = validate_key(Path(store.path), conflict.key)
            capture_before_write(store, [conflict.key, INDEX_FILENAME])
            current = target.read_bytes() if target.is_file() else None
            versions = {"ours": current, "theirs": conflict.theirs, "merged": text, "delete": None}
            chosen = versions[choice]
            content = chosen.encode("utf-8") if isinstance(chosen, str) else chosen
            if Path(conflict.key).name == INDEX_FILENAME and choice != "ours":
                in_repo = set(clone.folder_files(folder_for(store)))  # the shared form
                content = with_local_entries(conflict.key, content, current, in_repo)
            note = f"resolved a team sync conflict: kept {choice}"
            theirs = None if conflict.theirs is None else conflict.theirs.encode("utf-8")
            if theirs is not None and theirs != content and (content or current) is not None:
                their_note = "their side of a team sync conflict, not kept"
                record_changes(store, {conflict.key: theirs}, via=Via.TEAM_SYNC, note=their_note)
            if content is None:
                delete_file(target, missing_ok=True)
                if current is not None:
                    record_changes(
                        store, {}, {conflict.key: current}, via=Via.UI, user=user, note=note
                    )
                if is_topic(conflict.key):  # its line goes with it (a conflict kept both)
                    index_before = read_index_bytes(store)
                    delete_index_entry(store.path, conflict.key)
                    record_index(store, index_before, via=Via.UI, user=user, note=note)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                if content != current:
                    write_atomic_bytes(target, content)
                record_changes(store, {conflict.key: content}, via=Via.UI, user=user, note=note)
            conflict.resolved_at, conflict.resolved_by = timezone.now(), user
            conflict.resolution = choice
            conflict.save(update_fields=["resolved_at", "resolved_by", "resolution"])
            # The shared repository holds the other side's version now: measure from it, so
            # whatever the person chose is seen as a change and committed.
            state = _state(store)
            shared = clone.folder_files(folder_for(store)).get(conflict.key)
            if shared is None:
                state.base.pop(conflict.key, None)
            else:
                state.base[conflict.key] = checksum(shared)
            state.save(update_fields=["base"])
            rescan_store(store)
        _commit(clone, store, user, {conflict.key, INDEX_FILENAME})
    record_event(
        "conflict",
        store=store,
        user=user,
        path=conflict.key,
        reason=conflict.kind,
        resolution=choice,
    )
