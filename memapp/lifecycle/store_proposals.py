"""Proposals that change a store as a whole — consolidation and distillation (docs/design.md
§14.6–§14.8): what the review shows and how approving applies them.

The review is a whole-store diff: every file the ticked changes touch, the index before and
after with its cap meters, and what a person must tick explicitly (a proposal deleting more than
a quarter of the store or emptying the index, a file edited after the run read it).

Approving is all or nothing. Everything is checked first: a topic file changed since it was
proposed makes every ticked change wait (a conflict shown with both versions) and nothing is
written, as a merge half applied could lose what it merged. The index is merged instead: what
changed in it since the run read it is kept (`merge_index`), so the two proposals of one run
never undo each other's entries. Then, under the directory's `.consolidate-lock`
(a local agent consolidating it means "try again later"), the files and the index are written by
one `do_put_files` call, through the normal write path (atomic per file, secret-checked,
mirrored, versioned, committed for team sync). If writing fails halfway, every file written is
put back as it was and the lock's mtime is restored: the store is left exactly as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from django.db import transaction

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.proposals import (
    EDITABLE,
    EditRefused,
    ProposalClosed,
    ProposalResult,
    Revision,
    change_diff,
    check_access,
    close_proposal,
    disk_checksum,
    do_rebase_change,
    file_on_disk,
    rendered_change,
    revise_change,
)
from memapp.memdir.atomic import delete_file, write_atomic_bytes
from memapp.memdir.comparison import FileChange, compare_file, side_by_side
from memapp.memdir.consolidate_lock import (
    LockUnavailable,
    read_lock,
    release_lock,
    restore_lock,
    try_acquire_lock,
)
from memapp.memdir.frontmatter import FrontmatterError
from memapp.memdir.index import (
    INDEX_FILENAME,
    format_index_entry,
    index_size,
    is_linkable,
    merge_index,
    over_caps_reason,
    parse_index_entries,
    with_index_entry,
    without_index_entry,
)
from memapp.memdir.index_plan import Risk, fit_index, index_checks, store_risks
from memapp.memdir.store_files import FileRejected, walk_store
from memapp.stores.actions import EditConflict, do_put_files, do_save_memory, store_file_path
from memapp.stores.changes import announce_change
from memapp.stores.flags import project_index_caps
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Store

__all__ = [
    "INDEX_KEY",
    "STORE_WIDE_KINDS",
    "ApplyFailed",
    "ApplyRefused",
    "NeedsConfirmation",
    "StoreBusy",
    "StoreReview",
    "ask_check",
    "default_selection",
    "do_apply_store_proposal",
    "do_rebase_store_change",
    "edited_check",
    "index_as_approved",
    "index_text",
    "is_store_wide",
    "needs_tick",
    "proposed_index",
    "review_store_proposal",
]

log = logging.getLogger(__name__)

INDEX_KEY = INDEX_FILENAME
STORE_WIDE_KINDS = (Proposal.Kind.CONSOLIDATION, Proposal.Kind.DISTILLATION)
VIA = "proposal"


class ApplyRefused(Exception):
    """Approving did not happen; nothing was written (the message says why)."""


class NeedsConfirmation(ApplyRefused):
    """The ticked changes are risky as a whole; a person must tick that they mean it."""

    def __init__(self, risks: list[Risk]) -> None:
        super().__init__("; ".join(risk.message for risk in risks))
        self.risks = risks


class StoreBusy(ApplyRefused):
    """A local agent is consolidating the directory now (or its lock cannot be taken)."""


class ApplyFailed(ApplyRefused):
    """Writing failed halfway; what was written has been put back."""


def is_store_wide(proposal: Proposal) -> bool:
    return proposal.kind in STORE_WIDE_KINDS


def edited_check() -> dict[str, str]:
    return {
        "code": "edited",
        "level": "bad",
        "message": "changed after this run read it: approving would replace that edit, so it "
        "is applied only if you tick it",
    }


def ask_check(code: str, message: str) -> dict[str, str]:
    """A check that is no fault but leaves the change for a person to tick (level `ask`)."""
    return {"code": code, "level": "ask", "message": message}


def needs_tick(change: ProposalChange) -> bool:
    """A change with a `bad` or `ask` check is never selected for a person: only their tick
    applies it."""
    return any(check.get("level") in ("bad", "ask") for check in change.checks)


def default_selection(changes: Iterable[ProposalChange]) -> list[int]:
    return [
        c.pk for c in changes if c.status == ProposalChange.Status.PENDING and not needs_tick(c)
    ]


def _after(store: Store, change: ProposalChange, before: bytes | None) -> str:
    """The file as approving the change writes it: the index as proposed (with what changed
    in it since), a topic file with its other frontmatter keys kept."""
    if change.key == INDEX_KEY:
        return proposed_index(change, (before or b"").decode("utf-8", "replace"))
    return rendered_change(store, change, before)


def index_text(store: Store) -> str:
    """The store's MEMORY.md as it is on disk ("" when there is none)."""
    return (file_on_disk(store, INDEX_KEY) or b"").decode("utf-8", "replace")


def proposed_index(change: ProposalChange, index_now: str) -> str:
    """The index an index change proposes, merged with what changed in the index since its run
    read it (`index_now` is the index as it is): what the review shows and approving writes."""
    if change.base_text is None:
        return change.body
    return merge_index(change.base_text, index_now, change.body)


def _revise(store: Store, user, change: ProposalChange, edit: Mapping[str, str]) -> Revision:
    """A person's edit before approving: a topic file's through `revise_change`; the index
    as typed, with Unix line endings. The index was shown merged with what changed since the
    run: an edit of it is the whole index as the person wants it, so nothing is merged into
    it again."""
    if change.key != INDEX_KEY:
        return revise_change(store, user, change, edit)
    for name in EDITABLE:
        value = edit.get(name)
        if value is None:
            continue
        if name == "body":
            value = value.replace("\r\n", "\n")
            if change.key == INDEX_KEY:
                now = index_text(store)
                if value == proposed_index(change, now).replace("\r\n", "\n"):
                    continue  # sent back as shown
                change.base_text = now
        else:
            value = " ".join(value.split())
            if not value:
                continue
        if value != getattr(change, name):
            setattr(change, name, value)
            change.edited = True
    return Revision(store)


@dataclass
class Outcome:
    """The store as the selected changes would leave it."""

    files: dict[str, str] = field(default_factory=dict)  # updates, creates, then the index
    delete: list[str] = field(default_factory=list)
    index_before: str = ""
    index_after: str = ""
    # The checksum each file had when the person's choice was checked ("" for none): the write
    # is refused for a file that changed since, instead of overwriting that change.
    expected: dict[str, str] = field(default_factory=dict)
    risks: list[Risk] = field(default_factory=list)
    problems: dict[int, str] = field(default_factory=dict)  # change id → why it cannot render
    topic_count: int = 0  # the store's topic files on disk before the changes
    # New memories the person sent to their other store, written there after this one.
    moved: list[tuple[ProposalChange, Store]] = field(default_factory=list)


def _topic_keys(store: Store) -> set[str]:
    """The store's topic files as they are on disk now (the mirror may lag behind)."""
    return {found.key for found in walk_store(store.path, store.exclude, indexes=False)}


def _relinked(text: str, old_key: str, line: str) -> str:
    """`text` with the entry of `old_key` replaced in place by `line` (the entry of a memory
    a person renamed or redescribed before approving); unchanged when it has none."""
    lines = text.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        entries = parse_index_entries(raw)
        if entries and entries[0].path == old_key:
            lines[i] = line + raw[len(raw.rstrip("\r\n")) :]
            return "".join(lines)
    return text


def _entry_at(lines: list[str], key: str) -> int | None:
    """Where the entry of `key` is among `lines`."""
    for i, raw in enumerate(lines):
        entries = parse_index_entries(raw)
        if entries and entries[0].path == key:
            return i
    return None


def _put_back(proposed: str, index_now: str, key: str) -> str:
    """`proposed` with the entry `index_now` has for `key` put back after the nearest line
    above it that `proposed` kept (first when none): a file a person chose to keep keeps its
    line where it was."""
    now, lines = index_now.splitlines(), proposed.splitlines(keepends=True)
    stripped = [line.rstrip("\r\n") for line in lines]
    at = _entry_at(now, key)
    if at is None or _entry_at(stripped, key) is not None:
        return proposed
    above = [stripped.index(now[i]) + 1 for i in range(at) if now[i] in stripped]
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.insert(above[-1] if above else 0, now[at] + "\n")
    return "".join(lines)


def _outcome(
    store: Store,
    selected: list[ProposalChange],
    caps: tuple[int, int],
    revisions: Mapping[int, Revision] | None = None,
    kept: Iterable[str] = (),
) -> Outcome:
    """The store as the `selected` changes, revised as the person edited them, would leave
    it: what the review shows and approving writes. `kept`: the files of deletes left
    unticked, whose index lines stay although the proposed index drops them."""
    revisions = revisions or {}
    existing = _topic_keys(store)
    index_bytes = file_on_disk(store, INDEX_KEY)
    index_now = (index_bytes or b"").decode("utf-8", "replace")
    outcome = Outcome(
        index_before=index_now,
        expected={INDEX_KEY: disk_checksum(index_bytes)},
        topic_count=len(existing),
    )
    topic = []
    for change in selected:
        revision = revisions.get(change.pk)
        if revision is not None and revision.store.pk != store.pk:
            outcome.moved.append((change, revision.store))
        elif change.key != INDEX_KEY:
            topic.append(change)
    outcome.expected |= {c.key: c.base_checksum for c in topic}
    index_change = next((c for c in selected if c.key == INDEX_KEY), None)
    ordered = sorted(topic, key=lambda c: c.action == ProposalChange.Action.CREATE)
    for change in ordered:
        if change.action == ProposalChange.Action.DELETE:
            outcome.delete.append(change.key)
            continue
        try:
            outcome.files[change.key] = _after(store, change, file_on_disk(store, change.key))
        except FrontmatterError as exc:
            outcome.problems[change.pk] = str(exc)
    keys_after = (existing - set(outcome.delete)) | set(outcome.files)
    if index_change is not None:
        created = {
            c.key: (c.name, c.description)
            for c in topic
            if c.action == ProposalChange.Action.CREATE
        }
        proposed = proposed_index(index_change, index_now)
        for change in topic:
            old_key = revisions[change.pk].relink if change.pk in revisions else None
            if old_key and change.action != "delete" and is_linkable(change.key):
                line = format_index_entry(change.name, change.key, change.description)
                proposed = _relinked(proposed, old_key, line)
        for key in kept:
            proposed = _put_back(proposed, index_now, key)
        index_after = fit_index(proposed, keys_after, created)
    else:
        index_after = index_now
        for change in topic:
            if change.action == ProposalChange.Action.DELETE:
                index_after = without_index_entry(index_after, change.key)
            elif is_linkable(change.key):
                line = format_index_entry(change.name, change.key, change.description)
                index_after = with_index_entry(index_after, change.key, line)
    outcome.index_after = index_after
    if index_after != index_now:
        outcome.files[INDEX_KEY] = index_after
    emptied = bool(parse_index_entries(index_now)) and not parse_index_entries(index_after)
    over = "" if index_after == index_now else _over_caps(index_after, caps)
    outcome.risks = store_risks(
        len(existing), len(outcome.delete), emptied and bool(keys_after), over
    )
    return outcome


def _unticked_deletes(changes: Iterable[ProposalChange], picked: list[ProposalChange]) -> list[str]:
    return [
        c.key
        for c in changes
        if c.action == ProposalChange.Action.DELETE
        and c.status == ProposalChange.Status.PENDING
        and c not in picked
    ]


def _over_caps(text: str, caps: tuple[int, int]) -> str:
    """The caps `text` is over, in the client's words ("" for none)."""
    (lines, size), (max_lines, max_bytes) = index_size(text), caps
    if lines <= max_lines and size <= max_bytes:
        return ""
    return over_caps_reason(lines, size, max_lines, max_bytes, lines > max_lines, size > max_bytes)


# --- the review -------------------------------------------------------------------------------


@dataclass
class Meter:
    """One cap meter: how much of a cap the index uses."""

    label: str
    used: int
    cap: int

    @property
    def percent(self) -> int:
        return round(100 * self.used / self.cap) if self.cap else 0

    @property
    def width(self) -> int:
        return min(100, self.percent)

    @property
    def over(self) -> bool:
        return self.used > self.cap


def _meters(text: str, caps: tuple[int, int]) -> list[Meter]:
    lines, size = index_size(text)
    return [Meter("lines", lines, caps[0]), Meter("bytes", size, caps[1])]


@dataclass
class ChangeView:
    change: ProposalChange
    file: FileChange | None
    problem: str = ""
    store: Store | None = None  # where it is written, when the person sent it to another store

    @property
    def needs_tick(self) -> bool:
        return needs_tick(self.change)


@dataclass
class StoreReview:
    """Everything the review page shows of a store-wide proposal, for the changes a person
    would approve now (the default selection unless given)."""

    proposal: Proposal
    changes: list[ChangeView]
    index: FileChange
    index_after: str  # MEMORY.md exactly as approving what is ticked writes it
    before: list[Meter]
    after: list[Meter]
    risks: list[Risk]
    file_count: int
    deletes: int
    creates: int
    updates: int
    selected: list[int]

    @property
    def pending(self) -> bool:
        return self.proposal.status == Proposal.Status.PENDING


def review_store_proposal(
    proposal: Proposal,
    selected: Iterable[int] | None = None,
    edits: Mapping[int, Mapping[str, str]] | None = None,
    user=None,
) -> StoreReview:
    """The review of the `selected` changes (the default selection when None), each pending
    change with the person's `edits` applied as approving would apply them (nothing saved):
    the index meters and lines, file names, stores and checks all follow ticks and edits."""
    store = proposal.store
    changes = list(proposal.changes.all())
    chosen = default_selection(changes) if selected is None else [int(pk) for pk in selected]
    revisions, refused = {}, {}
    for change in changes:
        if change.status == ProposalChange.Status.PENDING and (edits or {}).get(change.pk):
            try:
                revisions[change.pk] = _revise(
                    store, user or proposal.owner, change, edits[change.pk]
                )
            except EditRefused as exc:
                refused[change.pk] = str(exc)
    picked = [
        c
        for c in changes
        if c.pk in chosen and c.status == ProposalChange.Status.PENDING and c.pk not in refused
    ]
    caps = project_index_caps(store.project)
    outcome = _outcome(store, picked, caps, revisions, _unticked_deletes(changes, picked))
    views = []
    for change in changes:
        if change.pk in refused:
            views.append(ChangeView(change, None, refused[change.pk]))
            continue
        moved = revisions[change.pk].store if change.pk in revisions else store
        if moved.pk != store.pk:
            diff = change_diff(change, moved)
            views.append(ChangeView(change, diff.file, diff.problem, moved))
            continue
        before = file_on_disk(store, change.key)
        if change.status == ProposalChange.Status.CONFLICT and change.current_text is not None:
            before = change.current_text.encode("utf-8")
        if change.action == ProposalChange.Action.DELETE:
            text = (before or b"").decode("utf-8", "replace")
            removed = FileChange(change.key, "removed", disk_checksum(before), None)
            views.append(ChangeView(change, replace(removed, rows=tuple(side_by_side(text, "")))))
            continue
        try:
            if change.key == INDEX_KEY and change in picked:
                after = outcome.index_after.encode("utf-8")  # with the ticks and edits
            else:
                after = _after(store, change, before).encode("utf-8")
        except FrontmatterError as exc:
            views.append(ChangeView(change, None, str(exc)))
            continue
        views.append(ChangeView(change, compare_file(change.key, before, after)))
    index = compare_file(
        INDEX_KEY, outcome.index_before.encode("utf-8"), outcome.index_after.encode("utf-8")
    )
    return StoreReview(
        proposal=proposal,
        changes=views,
        index=index,
        index_after=outcome.index_after,
        before=_meters(outcome.index_before, caps),
        after=_meters(outcome.index_after, caps),
        risks=outcome.risks,
        file_count=outcome.topic_count,
        deletes=sum(c.action == "delete" for c in changes if c.key != INDEX_KEY),
        creates=sum(c.action == "create" for c in changes),
        updates=sum(c.action == "update" and c.key != INDEX_KEY for c in changes),
        selected=chosen,
    )


def index_as_approved(proposal: Proposal, change: ProposalChange) -> str:
    """The body of a pending index `change` as approving the default selection writes it
    (merged with what changed since, fitted to the files that will exist): what the API
    shows; the merged proposal when the change is not ticked by default."""
    store = proposal.store
    pending = list(proposal.changes.filter(status=ProposalChange.Status.PENDING))
    chosen = set(default_selection(pending))
    if change.pk not in chosen:
        return proposed_index(change, index_text(store))
    picked = [c for c in pending if c.pk in chosen]
    kept = _unticked_deletes(pending, picked)
    return _outcome(store, picked, project_index_caps(store.project), kept=kept).index_after


# --- approving --------------------------------------------------------------------------------


def _roll_back(store: Store, user, originals: Mapping[str, bytes | None]) -> None:
    """Put every file back as it was before a failed apply (each atomically)."""
    with store_lock(store):
        for key, data in originals.items():
            try:
                if file_on_disk(store, key) == data:
                    continue
                path = store_file_path(store, key)
                if data is None:
                    delete_file(path, missing_ok=True)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic_bytes(path, data)
            except (OSError, FileRejected):
                log.exception("could not put %s of store %s back", key, store.pk)
        rescan_store(store)
    announce_change(store, user, set(originals))


def _conflicts(store: Store, picked: list[ProposalChange]) -> list[ProposalChange]:
    """The changes whose file changed since they were proposed; an index whose base is kept
    is merged instead."""
    found = []
    for change in picked:
        if change.key == INDEX_KEY and change.base_text is not None:
            continue
        current = file_on_disk(store, change.key)
        if disk_checksum(current) != change.base_checksum:
            change.status = ProposalChange.Status.CONFLICT
            change.current_text = (current or b"").decode("utf-8", "replace")
            change.message = "The file changed since this was proposed."
            found.append(change)
    return found


def _write(store: Store, user, outcome: Outcome) -> None:
    """One `do_put_files` under the directory's lock; put back on a failure halfway."""
    try:
        taken = try_acquire_lock(store.path)
    except LockUnavailable as exc:
        raise StoreBusy(f"the consolidation lock cannot be taken: {exc}") from None
    if taken is None:
        pid = read_lock(store.path).pid
        raise StoreBusy(
            f"a local agent (PID {pid}) is consolidating this directory right now; nothing "
            "was written: approve again in a few minutes"
        )
    prior, _ = taken
    acquired = time.time()
    keys = [*outcome.files, *outcome.delete]
    originals = {key: file_on_disk(store, key) for key in keys}
    if_match = {key: outcome.expected[key] for key in keys if outcome.expected.get(key)}
    try:
        do_put_files(
            store, user, outcome.files, delete=tuple(outcome.delete), if_match=if_match, via=VIA
        )
    except FileRejected as exc:  # checked before anything is written
        restore_lock(store.path, prior)
        raise ApplyRefused(str(exc)) from None
    except Exception as exc:
        _roll_back(store, user, originals)
        restore_lock(store.path, prior)
        log.exception("applying a proposal to store %s failed halfway", store.pk)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ApplyFailed(
            f"writing failed halfway ({reason}); every file written was put back, so the "
            "store is as it was"
        ) from None
    release_lock(store.path, acquired)


def _write_moved(user, moved: list[tuple[ProposalChange, Store]]) -> dict[int, str]:
    """Write the new memories a person sent to their other store, each through
    `do_save_memory`; why each one refused was not written (change id → reason)."""
    refused = {}
    for change, target in moved:
        try:
            do_save_memory(
                target,
                user,
                name=change.name,
                description=change.description,
                memory_type=change.type or None,
                body=change.body,
                path=change.key,
                base_sha256="",
                via=VIA,
            )
        except EditConflict:
            refused[change.pk] = f"{change.key} appeared in the {target.kind} store meanwhile"
        except (FileRejected, FrontmatterError) as exc:
            refused[change.pk] = str(exc)
    return refused


def do_apply_store_proposal(
    proposal: Proposal,
    user,
    change_ids: Iterable[int] | None = None,
    edits: Mapping[int, Mapping[str, str]] | None = None,
    *,
    confirm: bool = False,
    decision: str = "approved",
) -> ProposalResult:
    """Approve a store-wide proposal: the selected pending changes (the default selection,
    never a change with a `bad` check, when `change_ids` is None), each with the person's
    `edits`, applied all together or not at all.

    A change whose topic file changed since it was proposed makes this a conflict (those
    changes marked, nothing written, the proposal still open); the index is merged instead.
    A new memory the person sent to their other store is written there afterwards, on its
    own. Raises ProposalClosed when already decided, AccessLost when `user` may no longer see
    the store, ValueError for a change id that is not one of
    its pending changes, NeedsConfirmation when the selection is risky and `confirm` is
    false, StoreBusy when a local agent holds the directory's lock, ApplyRefused when the
    write path refuses a file (a secret, say) and ApplyFailed when writing failed halfway and
    was undone.
    """
    if proposal.status != Proposal.Status.PENDING:
        raise ProposalClosed(f"this proposal was already {proposal.status}")
    store = proposal.store
    check_access(user, store)
    pending = list(proposal.changes.filter(status=ProposalChange.Status.PENDING))
    wanted = set(default_selection(pending) if change_ids is None else map(int, change_ids))
    if wanted - {c.pk for c in pending}:
        raise ValueError("only pending changes of this proposal can be approved")
    picked = [c for c in pending if c.pk in wanted]
    if not picked:
        raise ApplyRefused("tick the changes to approve")
    revisions = {}
    for change in picked:
        try:
            revisions[change.pk] = _revise(store, user, change, (edits or {}).get(change.pk, {}))
        except EditRefused as exc:
            raise ApplyRefused(f"{change.key}: {exc}") from None
    result = ProposalResult()
    conflicts = _conflicts(store, [c for c in picked if revisions[c.pk].store.pk == store.pk])
    if conflicts:
        with transaction.atomic():
            for change in conflicts:
                change.save()
        result.conflicts = [c.key for c in conflicts]
        return result
    outcome = _outcome(
        store,
        picked,
        project_index_caps(store.project),
        revisions,
        _unticked_deletes(pending, picked),
    )
    if outcome.problems:
        raise ApplyRefused("; ".join(outcome.problems.values()))
    if outcome.risks and not confirm:
        raise NeedsConfirmation(outcome.risks)
    if outcome.files or outcome.delete:
        _write(store, user, outcome)
    refused = _write_moved(user, outcome.moved)
    with transaction.atomic():
        for change in pending:
            if change.pk in refused:
                change.status, change.message = ProposalChange.Status.REFUSED, refused[change.pk]
                result.refused.append(change.key)
            elif change in picked:
                change.status, change.message = ProposalChange.Status.APPLIED, ""
                result.applied.append(change.key)
            else:
                change.status = ProposalChange.Status.SKIPPED
                result.skipped.append(change.key)
            change.save()
        close_proposal(proposal, user, decision, result)
    return result


def do_rebase_store_change(change: ProposalChange) -> ProposalChange:
    """Take a conflicted change up again against the file as it is now (the person reviews
    the difference from what is there); an index gets its own checks back."""
    change = do_rebase_change(change)
    if change.key == INDEX_KEY:
        store = change.proposal.store
        current = index_text(store)
        change.base_text = current
        change.checks = index_checks(
            change.body,
            _topic_keys(store),
            project_index_caps(store.project),
            bool(parse_index_entries(current)),
        )
        change.save(update_fields=["checks", "base_text"])
    return change
