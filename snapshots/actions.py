"""Every multi-step write of snapshot review: one `do_<verb>_<noun>` function each."""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from memapp.memdir.agent_snapshots import (
    MARKER_FILENAME,
    MAX_SNAPSHOT_FILE_BYTES,
    SNAPSHOTS_FOLDER,
    SnapshotError,
    compare_snapshot,
    initialize_from_snapshot,
    keep_local,
    merge_from_snapshot,
    read_marker,
    replace_from_snapshot,
)
from memapp.memdir.atomic import delete_file, write_atomic
from memapp.memdir.index import INDEX_FILENAME
from memapp.memdir.keys import PathTraversalError, validate_key
from memapp.memdir.paths import agent_memory_dir, canonical_git_root, repo_slug_for, sanitize_path
from memapp.memdir.secret_rules import scan_text
from memapp.stores.events import record_event
from memapp.stores.history import record_changes, record_index
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project, ProjectAlias, Store, Via
from memapp.stores.projects import (
    NoProject,
    adopt_slug,
    canonical_ref,
    find_project,
    may_create_project,
)
from snapshots.models import Checkout, SnapshotDecision, upload_root
from snapshots.targets import SCOPES, Target, snapshot_agents

Decision = SnapshotDecision.Decision
# What a person may decide for each status (docs/design.md §13).
ALLOWED = {
    "initialize": (Decision.INITIALIZE, Decision.DISMISS),
    "update_available": (Decision.MERGE, Decision.KEEP, Decision.REPLACE, Decision.DISMISS),
    "none": (),
}
_FOLDERS = {Store.AgentScope.PROJECT: "agent-memory", Store.AgentScope.LOCAL: "agent-memory-local"}


class DecisionRefused(Exception):
    """The decision cannot be carried out; the message says why, for the person who made it."""


class UploadRejected(Exception):
    """An upload refused as a whole (nothing written), with the API's status, code and details."""

    def __init__(self, status: int, code: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.details = details or {}


# --- checkouts and their stores ------------------------------------------------------------------


def _agent_dirs(folder: Path) -> list[Path]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return sorted(
        Path(e.path)
        for e in entries
        if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
    )


def _store_fields(checkout: Checkout, agent_type: str, scope: str) -> dict:
    host = checkout.origin == Checkout.Origin.HOST
    return {
        "kind": Store.Kind.AGENT,
        "origin": Store.Origin.DISCOVERED if host else Store.Origin.MANAGED,
        # User-scope memory belongs to no project, as discovery has it.
        "project": None if scope == Store.AgentScope.USER else checkout.project,
        "owner": checkout.owner,
        "mount": "",
        "agent_type": agent_type,
        "agent_scope": scope,
        "exclude": [],
    }


def ensure_agent_store(checkout: Checkout, agent_type: str, scope: str, path: Path) -> Store:
    store, _ = Store.objects.update_or_create(
        path=str(path), defaults=_store_fields(checkout, agent_type, scope)
    )
    return store


@transaction.atomic
def _sync_stores(checkout: Checkout) -> list[Store]:
    found: list[tuple[str, str, Path]] = []
    for scope, folder in _FOLDERS.items():
        for path in _agent_dirs(checkout.repo / ".claude" / folder):
            found.append((path.name, scope, path))
    prefixes = [str(checkout.repo / ".claude") + os.sep]
    user_dirs = checkout.user_memory_base() / "agent-memory"
    if checkout.origin == Checkout.Origin.UPLOAD:
        found += [(p.name, Store.AgentScope.USER, p) for p in _agent_dirs(user_dirs)]
        prefixes.append(str(user_dirs) + os.sep)
    else:
        # The host's user-scope dirs are discovery's; make sure the ones a snapshot of this
        # checkout applies to are stores already, so the review can link to them.
        for agent in snapshot_agents(checkout.repo):
            if (user_dirs / agent).is_dir():
                found.append((agent, Store.AgentScope.USER, user_dirs / agent))
    stores = [ensure_agent_store(checkout, agent, scope, path) for agent, scope, path in found]
    for prefix in prefixes:
        Store.objects.filter(kind=Store.Kind.AGENT, path__startswith=prefix).exclude(
            pk__in=[s.pk for s in stores]
        ).delete()
    return stores


def do_rescan_checkout(checkout: Checkout) -> list[Store]:
    """Mirror the checkout's agent memory dirs as stores (project and local scope, and for an
    upload its user scope), drop stores whose directory is gone, and rescan each one."""
    stores = _sync_stores(checkout)
    for store in stores:
        rescan_store(store)
    checkout.scanned_at = timezone.now()
    checkout.save(update_fields=["scanned_at"])
    return stores


def _project_for(user, slug: str | None, dirname: str) -> Project:
    """The project of a checkout, by slug or directory name; a project first known by its
    directory name is linked to the slug (docs/design.md §1)."""
    project = (find_project(slug) if slug else None) or find_project(dirname)
    if project is None:
        project = Project.objects.create(key=slug or dirname, repo_slug=slug or "")
        if slug:
            ProjectAlias.objects.create(name=dirname, project=project)
        return project
    if slug and project.key == dirname and not project.repo_slug:
        adopt_slug(project, slug)
    return project


def do_register_checkout(user, path: Path) -> Checkout:
    """Register a checkout on this host (a path already checked by `CheckoutForm`)."""
    slug = repo_slug_for(path)
    dirname = sanitize_path(str(canonical_git_root(path) or path))
    with transaction.atomic():
        project = _project_for(user, slug, dirname)
        project.members.add(user)
        checkout = Checkout.objects.create(
            path=str(path), project=project, owner=user, origin=Checkout.Origin.HOST
        )
    do_rescan_checkout(checkout)
    return checkout


def do_remove_checkout(checkout: Checkout) -> None:
    """Forget a checkout and its project/local-scope stores. A host checkout's files are left
    alone; an upload's copy in the data dir is deleted."""
    prefix = str(checkout.repo / ".claude") + os.sep
    with transaction.atomic():
        Store.objects.filter(kind=Store.Kind.AGENT, path__startswith=prefix).delete()
        checkout.delete()
    if checkout.origin == Checkout.Origin.UPLOAD:
        shutil.rmtree(checkout.repo, ignore_errors=True)


# --- decisions -----------------------------------------------------------------------------------


def _apply(target: Target, decision: str, approved: dict[str, str]):
    snapshot, memory, stamp = target.snapshot_dir, target.memory_dir, target.status.updated_at
    if decision == Decision.INITIALIZE:
        return initialize_from_snapshot(snapshot, memory, updated_at=stamp, expected=approved)
    if decision == Decision.MERGE:
        return merge_from_snapshot(snapshot, memory, approved, updated_at=stamp, expected=approved)
    if decision == Decision.KEEP:
        return keep_local(snapshot, memory, updated_at=stamp)
    return replace_from_snapshot(snapshot, memory, updated_at=stamp, expected=approved)


def _top_level_memories(directory: Path) -> dict[str, bytes]:
    """The bytes of a memory dir's top-level `*.md` files, before a decision replaces them."""
    found = {}
    for entry in _scandir(directory):
        if entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
            try:
                found[entry.name] = Path(entry.path).read_bytes()
            except OSError:
                continue
    return found


def _scandir(directory: Path) -> list[os.DirEntry]:
    try:
        return list(os.scandir(directory))
    except OSError:
        return []


def do_decide_snapshot(
    user, target: Target, decision: str, fingerprint: str, files: Collection[str] = ()
) -> SnapshotDecision:
    """Record a person's decision on a pending snapshot update and, for a checkout on this host,
    carry it out at once (an uploaded one waits for `memhub-agent snapshot apply`).

    `fingerprint` is the review's, as the person saw it: if the snapshot or the local memory
    changed since, nothing is done. `files` are the ticked files of a merge.
    """
    review = compare_snapshot(target.snapshot_dir, target.memory_dir)
    if review.fingerprint != fingerprint:
        raise DecisionRefused(
            "The snapshot or the local memory changed since you opened this page: review it again."
        )
    status = review.status
    if decision not in ALLOWED[status.action]:
        raise DecisionRefused(f"“{decision}” is not a choice when the status is {status.action}.")
    assert status.updated_at is not None
    # What initialize and replace copy: every snapshot file that passed the checks.
    copyable = {
        f.name: f.snapshot_sha256 for f in review.files if f.snapshot_sha256 and not f.secrets
    }
    if decision == Decision.MERGE:
        applicable = {f.name for f in review.files if f.applicable}
        unknown = sorted(set(files) - applicable)
        if unknown:
            raise DecisionRefused(f"These files cannot be merged: {', '.join(unknown)}.")
        approved = {name: copyable[name] for name in files}
    elif decision in (Decision.INITIALIZE, Decision.REPLACE):
        approved = copyable
    else:
        approved = {}
    checkout = target.checkout
    result: dict = {}
    applied_at = None
    store = target.store
    if checkout.origin == Checkout.Origin.HOST and decision != Decision.DISMISS:
        if store is not None:
            rescan_store(store)  # local changes not yet seen go into the history first
        before = _top_level_memories(target.memory_dir)
        index_path = target.memory_dir / INDEX_FILENAME
        index_before = index_path.read_bytes() if index_path.is_file() else None
        try:
            done = _apply(target, decision, approved)
        except (SnapshotError, PathTraversalError, OSError) as exc:
            raise DecisionRefused(f"Nothing was applied: {exc}") from exc
        result = {
            "written": list(done.written),
            "removed": list(done.removed),
            "refused": [{"name": r.name, "reason": r.reason} for r in done.refused],
            "index_entries": list(done.index_entries),
        }
        applied_at = timezone.now()
        store = ensure_agent_store(checkout, target.agent_type, target.scope, target.memory_dir)
        written = {name: (target.memory_dir / name).read_bytes() for name in done.written}
        removed = {name: before.get(name) for name in done.removed}
        note = f"{decision} from the snapshot of {status.updated_at}"
        record_changes(store, written, removed, via=Via.SNAPSHOT, user=user, note=note)
        record_index(store, index_before, via=Via.SNAPSHOT, user=user, note=note)
        rescan_store(store)
    row = SnapshotDecision.objects.create(
        checkout=checkout,
        agent_type=target.agent_type,
        scope=target.scope,
        updated_at=status.updated_at,
        decision=decision,
        files=approved,
        result=result,
        store=store,
        decided_by=user,
        applied_at=applied_at,
    )
    record_event(
        "snapshot_decision",
        project=checkout.project,
        user=user,
        store=store,
        agent_type=target.agent_type,
        scope=target.scope,
        decision=decision,
        updated_at=status.updated_at,
    )
    return row


# --- uploads (memhub-agent snapshot push) --------------------------------------------------------


def _check_names(root: Path, files: Mapping[str, str], allowed_hidden: set[str]) -> None:
    problems = []
    for name in files:
        if "/" in name or (name.startswith(".") and name not in allowed_hidden):
            problems.append({"key": name, "reason": "not a top-level file"})
            continue
        try:
            validate_key(root, name)
        except PathTraversalError as exc:
            problems.append({"key": name, "reason": str(exc)})
    if problems:
        raise UploadRejected(
            400, "invalid_key", "Some file names are not allowed.", {"entries": problems}
        )


def _check_contents(named: Mapping[str, Mapping[str, str]]) -> None:
    large, secrets = [], []
    for where, files in named.items():
        for name, text in files.items():
            if len(text.encode("utf-8", "surrogatepass")) > MAX_SNAPSHOT_FILE_BYTES:
                large.append({"key": f"{where}/{name}"})
            for hit in scan_text(text):
                secrets.append(
                    {
                        "key": f"{where}/{name}",
                        "rule_id": hit.rule_id,
                        "label": hit.label,
                        "line": hit.line,
                    }
                )
    if large:
        raise UploadRejected(
            413, "entry_too_large", "Some files are over 250,000 bytes.", {"entries": large}
        )
    if secrets:
        raise UploadRejected(
            422,
            "secret_detected",
            "Some files hold secrets; nothing was stored.",
            {"error_code": "secret_detected", "entries": secrets},
        )


def _mirror_dir(directory: Path, files: Mapping[str, str] | None) -> None:
    """Make `directory`'s top-level files exactly `files` (None: the directory does not exist)."""
    if files is None:
        shutil.rmtree(directory, ignore_errors=True)
        return
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = validate_key(directory, name)
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except (OSError, UnicodeDecodeError):
            pass
        write_atomic(path, text)
    for entry in os.scandir(directory):
        if entry.is_file(follow_symlinks=False) and entry.name not in files:
            delete_file(entry.path, missing_ok=True)


def _upload_checkout(user, project: Project) -> Checkout:
    folder = f"{project.pk}-{sanitize_path(project.key)[:80]}"
    path = upload_root(user.pk) / "checkouts" / folder
    checkout, _ = Checkout.objects.get_or_create(
        owner=user,
        project=project,
        origin=Checkout.Origin.UPLOAD,
        defaults={"path": str(path)},
    )
    return checkout


def do_upload_snapshot(
    user,
    project_ref: str,
    agent_type: str,
    snapshot: Mapping[str, str] | None,
    scopes: Mapping[str, Mapping[str, str] | None],
    alias: str = "",
) -> Checkout:
    """Store what an agent's machine has for one agent: the snapshot in its checkout and each
    scope's memory dir (top-level files, the marker included). Everything is checked first
    (names, sizes, secrets); then the copy in memhub's data dir is made to match.

    A scope sent with a marker naming a decided snapshot version confirms that the agent's
    machine carried the decision out.

    Raises `NoProject` for a project the user is no member of, as for one that does not exist
    and they may not create; `UploadRejected` for what fails a check. Nothing is made then.
    """
    try:
        agent = agent_memory_dir(agent_type, "project", repo="/").name
    except ValueError as exc:
        raise UploadRejected(400, "invalid_agent_type", str(exc)) from None
    # Check everything before anything is created: names against where they will go (the
    # same rules as the final paths: the upload folder does not hold symlinks), then contents.
    probe = Checkout(
        path=str(upload_root(user.pk) / "checkouts" / "probe"),
        owner=user,
        origin=Checkout.Origin.UPLOAD,
    )
    if snapshot is not None:
        _check_names(probe.repo / ".claude" / SNAPSHOTS_FOLDER / agent, snapshot, set())
    for scope, files in scopes.items():
        if files is not None:
            _check_names(probe.memory_dir(agent, scope), files, {MARKER_FILENAME})
    named = {"snapshot": snapshot or {}, **{s: f for s, f in scopes.items() if f is not None}}
    _check_contents(named)
    project_ref = canonical_ref(project_ref)  # `acme/app.git` is `acme/app`
    project = find_project(project_ref) or (find_project(alias) if alias else None)
    with transaction.atomic():
        if project is None:
            if not may_create_project(user, project_ref):
                raise NoProject(project_ref)
            project = Project.objects.create(key=project_ref)
            project.members.add(user)
        elif not project.members.filter(pk=user.pk).exists():
            # Nothing is made in someone else's project, and the answer is an unknown
            # project's, so it tells nothing of which exist (docs/design.md §1).
            raise NoProject(project_ref)
        checkout = _upload_checkout(user, project)
    snapshot_path = checkout.repo / ".claude" / SNAPSHOTS_FOLDER / agent
    dirs = {scope: checkout.memory_dir(agent, scope) for scope in SCOPES}
    _mirror_dir(snapshot_path, snapshot)
    for scope in SCOPES:
        _mirror_dir(dirs[scope], scopes.get(scope))
    do_rescan_checkout(checkout)
    _confirm_applied(checkout, agent, dirs)
    return checkout


def _confirm_applied(checkout: Checkout, agent_type: str, dirs: Mapping[str, Path]) -> None:
    for scope, directory in dirs.items():
        marker = read_marker(directory)
        if not marker.valid:
            continue
        SnapshotDecision.objects.filter(
            checkout=checkout,
            agent_type=agent_type,
            scope=scope,
            updated_at=marker.updated_at,
            applied_at__isnull=True,
        ).exclude(decision=Decision.DISMISS).update(applied_at=timezone.now())
