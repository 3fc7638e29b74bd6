"""Proposals (docs/design.md §14.6): changes a background job proposes, a person's decision on
them, and the one approve path every kind of proposal uses.

Approving writes each change through the stores' own write functions (`do_save_memory`,
`do_forget_memory`, with `via="proposal"`), so it is atomic, indexed, secret-checked, mirrored,
committed for team sync and recorded like any other write. A file that changed since it was
proposed is a conflict: nothing is written, and the person sees both versions.

A person's edits (name, description, body, type, and for a new memory the store it goes to)
pass through `revise_change` both when the review shows them and when approving writes them,
so the two never differ: the file name, the checks and the store follow the edit.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from django.db import transaction
from django.utils import timezone

from memapp.lifecycle.gemini_inbox import clear_applied_inbox
from memapp.lifecycle.models import ExtractionRun, Proposal, ProposalChange, Session
from memapp.memdir.comparison import FileChange, compare_file, side_by_side
from memapp.memdir.extraction import ProposedChange, change_checks
from memapp.memdir.frontmatter import FrontmatterError, Memory, parse_memory, render_memory
from memapp.memdir.scan import detect_type_form
from memapp.memdir.store_files import (
    FileRejected,
    check_entry,
    check_key_neighbours,
    checksum,
    normalize_key,
)
from memapp.stores.actions import (
    EditConflict,
    check_new_key,
    check_secrets,
    do_forget_memory,
    do_put_files,
    do_save_memory,
    new_memory_path,
    store_file_path,
)
from memapp.stores.events import record_event
from memapp.stores.flags import get_flag, project_index_caps
from memapp.stores.models import Store
from memapp.stores.prompting import team_store_for

__all__ = [
    "MEMORY_TYPES",
    "AccessLost",
    "ProposalResult",
    "EditRefused",
    "ProposalClosed",
    "Revision",
    "change_diff",
    "check_access",
    "close_proposal",
    "disk_checksum",
    "do_apply_proposal",
    "do_propose_changes",
    "do_rebase_change",
    "do_reject_proposal",
    "file_on_disk",
    "pending_count",
    "rendered_change",
    "revise_change",
    "target_store",
]

VIA = "proposal"
EDITABLE = ("name", "description", "body", "type", "scope")
MEMORY_TYPES = ("user", "feedback", "project", "reference")
# The checks a change's own text decides, taken again after an edit; the others (a file edited
# after the run read it, a date fix to tick) stay as the run left them.
TEXT_CHECKS = frozenset({"secret", "cap", "relative_dates", "why_how", "duplicate"})


HELD_BACK = (
    "Not written: another change of this approval was refused or changed meanwhile, and a "
    "proposal is applied whole or not at all."
)


class ProposalClosed(ValueError):
    """The proposal was already decided; nothing was done."""


class AccessLost(Exception):
    """The person may no longer see the proposal's store (removed from its project since the
    review opened): nothing was done."""


class EditRefused(ValueError):
    """A person's edit that cannot be written as asked (a user memory sent to the team store,
    an unknown type); the message says why."""


def check_access(user, store: Store) -> None:
    """Raise AccessLost unless `user` may see `store` now: approving checks it again at the
    moment of writing, whatever the page saw when it opened."""
    if not Store.objects.visible_to(user).filter(pk=store.pk).exists():
        where = f"the project {store.project}" if store.project else "this store"
        raise AccessLost(f"you no longer have access to {where}: nothing was written")


def file_on_disk(store: Store, key: str) -> bytes | None:
    try:
        return store_file_path(store, key).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except FileRejected as exc:
        if exc.details.get("rule") in ("parent-is-file", "key-is-folder"):
            return None  # no file can be read there; writing one is refused with the rule
        raise


def disk_checksum(data: bytes | None) -> str:
    """The file's checksum (`sha256:<hex>`), or "" when there is no file."""
    return "" if data is None else checksum(data)


def _checks(store: Store, change: ProposedChange) -> list[dict]:
    others = store.files.exclude(path=change.file).values_list("path", "description")
    return [
        check.as_dict()
        for check in change_checks(
            change,
            others,
            index_lines=(store.index_stats or {}).get("lines", 0),
            max_index_lines=project_index_caps(store.project)[0],
        )
    ]


def _proposed(change: ProposalChange) -> ProposedChange:
    return ProposedChange(
        change.action,
        "private",
        change.key,
        change.name,
        change.description,
        change.type or None,
        change.body,
        change.reason,
    )


def do_propose_changes(
    kind: str,
    store: Store,
    owner,
    changes: Sequence[ProposedChange],
    *,
    dropped: Sequence[Mapping] = (),
    sources: Sequence[Mapping] = (),
    sessions: Iterable[Session] = (),
    run: ExtractionRun | None = None,
) -> Proposal | None:
    """Store a proposal of `changes` to `store` for `owner` to review, each change with the
    checksum its file has now and its checks; None when there is no change (an empty list
    makes no proposal). Call it inside the transaction that moves the job's cursor."""
    if not changes:
        return None
    proposal = Proposal.objects.create(
        kind=kind,
        store=store,
        owner=owner,
        sources=list(sources),
        dropped=list(dropped),
        run=run,
    )
    proposal.sessions.set(list(sessions))
    ProposalChange.objects.bulk_create(
        ProposalChange(
            proposal=proposal,
            position=position,
            action=change.action,
            key=change.file,
            name=change.name,
            description=change.description,
            type=change.type or "",
            body=change.body,
            reason=change.reason,
            base_checksum=disk_checksum(file_on_disk(store, change.file)),
            checks=_checks(store, change),
        )
        for position, change in enumerate(changes)
    )
    return proposal


def rendered_change(store: Store, change: ProposalChange, before: bytes | None) -> str:
    """The topic file as approving the change would write it over `before` (other frontmatter
    keys kept)."""
    if before is None:
        previous = Memory(type_form=detect_type_form(store.path), has_frontmatter=True)
    else:
        previous = parse_memory(before, path=change.key)
    memory = replace(
        previous,
        name=change.name,
        description=change.description,
        type=change.type or None,
        body=change.body,
        type_form=previous.type_form or "top",
        path=change.key,
    )
    return render_memory(memory)


@dataclass
class ChangeDiff:
    """What the review shows of one change: the snapshot review's file comparison (between the
    file as it is now and as the change would leave it), or the reason it cannot be shown."""

    change: ProposalChange
    file: FileChange | None
    problem: str = ""


def _whole_file(change: ProposalChange) -> bool:
    """A change that carries the whole file (an agent's inbox patch, whose notes have no
    frontmatter), not the fields of a memory."""
    return change.proposal.kind == Proposal.Kind.INBOX


def change_diff(change: ProposalChange, store: Store | None = None) -> ChangeDiff:
    """`change` compared with its file in `store` (the proposal's unless the person moved it)."""
    store = store or change.proposal.store
    before = file_on_disk(store, change.key)
    if change.status == ProposalChange.Status.CONFLICT and change.current_text is not None:
        before = change.current_text.encode("utf-8")
    if _whole_file(change):
        return ChangeDiff(change, compare_file(change.key, before, change.body.encode("utf-8")))
    if change.action == ProposalChange.Action.DELETE:
        text = (before or b"").decode("utf-8", "replace")
        removed = FileChange(change.key, "removed", disk_checksum(before), None)
        return ChangeDiff(change, replace(removed, rows=tuple(side_by_side(text, ""))))
    try:
        after = rendered_change(store, change, before).encode("utf-8")
    except FrontmatterError as exc:
        return ChangeDiff(change, None, str(exc))
    return ChangeDiff(change, compare_file(change.key, before, after))


@dataclass
class ProposalResult:
    applied: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _check_change(store: Store, change: ProposalChange, replacing: Collection[str]) -> None:
    """Raise what writing `change` would (EditConflict for a file changed since it was
    proposed, FileRejected, FrontmatterError), writing nothing: every change of an approval is
    checked before any is written. `replacing` are the keys the approval deletes."""
    current = file_on_disk(store, change.key)
    if disk_checksum(current) != change.base_checksum:
        text = (current or b"").decode("utf-8", "replace")
        raise EditConflict(change.key, text, disk_checksum(current))
    if change.action == ProposalChange.Action.DELETE:
        store_file_path(store, change.key)
        return
    if _whole_file(change):
        text = change.body
    else:
        text = rendered_change(store, change, current)
    check_entry(change.key, text, exclude=store.exclude)
    if current is None:
        check_new_key(store, normalize_key(change.key), replacing=replacing)
    if store.kind == Store.Kind.TEAM:
        check_secrets(store, {change.key: text})


def _apply_change(store: Store, user, change: ProposalChange, replacing: Collection[str]) -> None:
    if _whole_file(change):
        if_match = {change.key: change.base_checksum or None}
        do_put_files(store, user, {change.key: change.body}, if_match=if_match, via=VIA)
        return
    index = not get_flag("skip_index", store.project)  # memhub's own writes honour it
    if change.action == ProposalChange.Action.DELETE:
        do_forget_memory(store, user, change.key, via=VIA, index=index)
        return
    do_save_memory(
        store,
        user,
        name=change.name,
        description=change.description,
        memory_type=change.type or None,
        body=change.body,
        path=change.key,
        base_sha256=change.base_checksum,
        via=VIA,
        index=index,
        replacing=replacing,
    )


def _failed(change: ProposalChange, result: ProposalResult, action, *args) -> bool:
    """Run `action(*args)` for `change`; when it raises a conflict or a refusal, mark the
    change so (with the reason) and count it in `result`, and answer True."""
    try:
        action(*args)
    except EditConflict as exc:
        change.status, change.current_text = ProposalChange.Status.CONFLICT, exc.disk_text
        change.message = "The file changed since this was proposed."
        result.conflicts.append(change.key)
    except (FileRejected, FrontmatterError, EditRefused) as exc:
        change.status, change.message = ProposalChange.Status.REFUSED, str(exc)
        result.refused.append(change.key)
    else:
        return False
    return True


def _write(
    store: Store,
    user,
    pending: list[ProposalChange],
    picked: list[ProposalChange],
    targets: Mapping[int, Store],
    deleted: Collection[str],
    result: ProposalResult,
) -> None:
    """Write the checked changes `picked` of `pending` (each to its target store), skip the
    others."""
    for change in pending:
        if change not in picked:
            change.status, change.message = ProposalChange.Status.SKIPPED, ""
            result.skipped.append(change.key)
            change.save(update_fields=["status", "message"])
            continue
        target = targets[change.pk]
        replacing = deleted if target.pk == store.pk else ()
        if not _failed(change, result, _apply_change, target, user, change, replacing):
            change.status, change.message = ProposalChange.Status.APPLIED, ""
            result.applied.append(change.key)
        change.save()


def _hold_back(picked: Iterable[ProposalChange], failed: Collection[ProposalChange]) -> None:
    """An approval that wrote nothing: a refused change stays open (an edit may fix it, or the
    person leaves it out; closed, its partner in a rename could be approved alone and the
    memory deleted), the others say why they wait and keep the person's edits."""
    for change in picked:
        if change.status == ProposalChange.Status.REFUSED:
            # Open again with the reason, but without the edit refused: it may hold the very
            # secret it was refused for.
            refused = ProposalChange.objects.filter(pk=change.pk)
            refused.update(status=ProposalChange.Status.PENDING, message=change.message)
            continue
        if change not in failed:
            change.message = HELD_BACK
        change.save()


def _look_alike_creates(
    picked: Iterable[ProposalChange],
    targets: Mapping[int, Store],
    deleted: Collection[str],
    result: ProposalResult,
) -> list[ProposalChange]:
    """The new files of one approval whose keys would be one file on macOS or Windows with
    each other (each was checked alone against the disk), refused; [] when none are."""
    by_store: dict[int, list[ProposalChange]] = {}
    for change in picked:
        target = targets[change.pk]
        if change.action == ProposalChange.Action.CREATE and not file_on_disk(target, change.key):
            by_store.setdefault(target.pk, []).append(change)
    for changes in by_store.values():
        try:
            check_key_neighbours([normalize_key(c.key) for c in changes], ())
        except FileRejected as exc:
            clash = next(c for c in changes if normalize_key(c.key) == exc.details.get("key"))
            clash.status, clash.message = ProposalChange.Status.REFUSED, str(exc)
            result.refused.append(clash.key)
            return [clash]
    return []


def _edit(change: ProposalChange, edit: Mapping[str, str]) -> set[str]:
    """A person's edit before approving (one-line fields kept on one line; a blank name or
    description keeps the proposed one); the fields it changed."""
    changed = set()
    for name in EDITABLE:
        value = edit.get(name)
        if value is None:
            continue
        if name == "body":
            value = value.replace("\r\n", "\n")
        else:
            value = " ".join(value.split())
            if not value and name in ("name", "description"):
                continue
        if value == getattr(change, name):
            continue
        if name == "type" and value not in MEMORY_TYPES:
            raise EditRefused(f"{value[:40]!r} is not a memory type")
        if name == "scope":
            if value not in ("", Store.Kind.PRIVATE, Store.Kind.TEAM):
                raise EditRefused(f"{value[:40]!r} is not a scope")
            if change.action != ProposalChange.Action.CREATE:
                raise EditRefused("only a new memory can go to the other store")
        setattr(change, name, value)
        changed.add(name)
    if changed:
        change.edited = True
    return changed


def target_store(store: Store, user, scope: str) -> Store:
    """The store a change is written to: the proposal's own, or, when the person chose the
    other scope, their private store or the project's team store (a member's only)."""
    if not scope or scope == store.kind:
        return store
    if store.project is None or store.kind not in (Store.Kind.PRIVATE, Store.Kind.TEAM):
        raise EditRefused("only a project's private and team memories can change scope")
    if scope == Store.Kind.TEAM:
        other = team_store_for(user, store.project)
    else:
        other = (
            Store.objects.filter(project=store.project, kind=Store.Kind.PRIVATE, owner=user)
            .order_by("pk")
            .first()
        )
    if other is None:
        raise EditRefused(f"you have no {scope} store in the project {store.project}")
    return other


@dataclass(frozen=True)
class Revision:
    """Where an edited change is written, and the file whose index line must follow the edit
    (its key before the edit), None when the edit left name, description and file alone."""

    store: Store
    relink: str | None = None


def revise_change(store: Store, user, change: ProposalChange, edit: Mapping[str, str]) -> Revision:
    """Apply a person's `edit` to `change` (in place, not saved) with what follows from it: a
    new memory's file name follows its name, type and store (the directory's style, in the
    folder proposed), and its checks are taken again on the edited text. The review shows
    what this returns and approving writes it. Raises EditRefused for an edit that cannot be
    written (a user memory is always private)."""
    old_key = change.key
    changed = _edit(change, edit)
    target = target_store(store, user, change.scope)
    if not changed:
        return Revision(target)
    if change.type == "user" and target.kind == Store.Kind.TEAM:
        raise EditRefused("a user memory is always private: it cannot go to the team store")
    if change.action == ProposalChange.Action.CREATE and changed & {"name", "type", "scope"}:
        folder = PurePosixPath(old_key).parent
        name = new_memory_path(
            Path(target.path) / folder,
            change.name,
            change.type or None,
            detect_type_form(target.path),
        )
        change.key = str(folder / name)
    if change.action != ProposalChange.Action.DELETE:
        kept = [c for c in change.checks if c.get("code") not in TEXT_CHECKS]
        change.checks = kept + _checks(target, _proposed(change))
    follows = changed & {"name", "description"} or change.key != old_key
    return Revision(target, old_key if follows else None)


def close_proposal(proposal: Proposal, user, decision: str, result: ProposalResult) -> None:
    """Record a decision: the proposal stays pending while a change is open, else it is applied
    when any change was, rejected otherwise; the `proposal_decided` event."""
    open_changes = proposal.changes.filter(
        status__in=[ProposalChange.Status.PENDING, ProposalChange.Status.CONFLICT]
    )
    if open_changes.exists():
        proposal.status = Proposal.Status.PENDING
    elif proposal.changes.filter(status=ProposalChange.Status.APPLIED).exists():
        proposal.status = Proposal.Status.APPLIED
    else:
        proposal.status = Proposal.Status.REJECTED
    proposal.decided_at, proposal.decided_by = timezone.now(), user
    proposal.decision = {"decision": decision, **result.__dict__}
    proposal.save(update_fields=["status", "decided_at", "decided_by", "decision"])
    record_event(
        "proposal_decided",
        store=proposal.store,
        user=user,
        proposal_kind=proposal.kind,
        decision=decision,
        applied=len(result.applied),
        conflicts=len(result.conflicts),
        refused=len(result.refused),
        skipped=len(result.skipped),
    )


def do_apply_proposal(
    proposal: Proposal,
    user,
    change_ids: Iterable[int] | None = None,
    edits: Mapping[int, Mapping[str, str]] | None = None,
    *,
    decision: str = "approved",
) -> ProposalResult:
    """Approve a proposal: write the selected pending changes (all when `change_ids` is None),
    each with the person's `edits` (change id → name/description/body/type/scope, through
    `revise_change`), through the normal write path. The pending changes not selected are
    skipped. Every selected change is checked before any is written, and they are written
    all or none: a change whose file changed since it was proposed becomes a conflict (both
    versions kept), one the write path would refuse (a secret, a broken header) is refused
    with the reason, and then nothing is written and every change stays open, with the
    person's edits. A new key may look like a key the same approval deletes (a case-only
    rename), not another new one. Raises
    ProposalClosed when the proposal was already decided, AccessLost when `user` may no
    longer see its store, and ValueError for a change id that is not one of its
    pending changes."""
    if proposal.status != Proposal.Status.PENDING:
        raise ProposalClosed(f"this proposal was already {proposal.status}")
    check_access(user, proposal.store)
    pending = list(proposal.changes.filter(status=ProposalChange.Status.PENDING))
    wanted = None if change_ids is None else {int(pk) for pk in change_ids}
    if wanted is not None and wanted - {c.pk for c in pending}:
        raise ValueError("only pending changes of this proposal can be approved")
    store, result = proposal.store, ProposalResult()
    picked = [c for c in pending if wanted is None or c.pk in wanted]
    deleted = {c.key for c in picked if c.action == ProposalChange.Action.DELETE}
    targets: dict[int, Store] = {}

    def check(change: ProposalChange) -> None:
        target = revise_change(store, user, change, (edits or {}).get(change.pk, {})).store
        targets[change.pk] = target
        _check_change(target, change, deleted if target.pk == store.pk else ())

    failed = [change for change in picked if _failed(change, result, check, change)]
    if not failed:
        failed = _look_alike_creates(picked, targets, deleted, result)
    if failed:
        _hold_back(picked, failed)
    else:
        _write(store, user, pending, picked, targets, deleted, result)
    close_proposal(proposal, user, decision, result)
    if proposal.kind == Proposal.Kind.INBOX and proposal.status == Proposal.Status.APPLIED:
        clear_applied_inbox(proposal)
    return result


def do_reject_proposal(proposal: Proposal, user) -> ProposalResult:
    """Reject what is still open in a proposal; nothing is written."""
    if proposal.status != Proposal.Status.PENDING:
        raise ProposalClosed(f"this proposal was already {proposal.status}")
    open_changes = proposal.changes.filter(
        status__in=[ProposalChange.Status.PENDING, ProposalChange.Status.CONFLICT]
    )
    result = ProposalResult(skipped=list(open_changes.values_list("key", flat=True)))
    open_changes.update(status=ProposalChange.Status.REJECTED)
    close_proposal(proposal, user, "rejected", result)
    return result


@transaction.atomic
def do_rebase_change(change: ProposalChange) -> ProposalChange:
    """Take a conflicted change up again against the file as it is now: its base becomes the
    current version (a create of a file that now exists becomes an update, an update of a
    file that is gone a create), so the person reviews the difference from what is there."""
    store = change.proposal.store
    current = file_on_disk(store, change.key)
    if change.action == ProposalChange.Action.DELETE and current is None:
        change.status, change.message = ProposalChange.Status.SKIPPED, "already deleted"
    else:
        if change.action != ProposalChange.Action.DELETE:
            exists = current is not None
            change.action = ProposalChange.Action.UPDATE if exists else ProposalChange.Action.CREATE
        change.status, change.message = ProposalChange.Status.PENDING, ""
    change.base_checksum = disk_checksum(current)
    change.current_text = None
    change.checks = _checks(store, _proposed(change))
    change.save()
    return change


def pending_count(user) -> int:
    """Proposals waiting for `user`'s review."""
    return Proposal.objects.visible_to(user).filter(status=Proposal.Status.PENDING).count()
