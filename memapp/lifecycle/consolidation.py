"""Consolidation and distillation runs, per store (docs/design.md §14.7–§14.8).

A run is asked for (`memapp.lifecycle.tasks`) by the sweep when the gates of
`memapp.lifecycle.gates` say a store is due, or by a person ("Consolidate now", which skips the
time and session gates). The task checks the flag, finds who reviews the result, then takes
the directory's `.consolidate-lock` (the last gate: a local agent holding it means skip).
Under it:

- distillation, when daily logs hold entries it has not read: one model call (or the offline
  rules) turns them into a `distillation` proposal, and the log cursor moves with it;
- consolidation: the four phases in one model call with `propose_memory_changes` (or the
  offline pass), into a `consolidation` proposal.

The lock is left with the run's start as its mtime (the last consolidation), or put back as it
was when the run fails. Each run records a `consolidation_run` event with its gate outcome.
"""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memapp.lifecycle.daily_logs import new_log_entries, store_logs
from memapp.lifecycle.gates import (
    latest_consolidation,
    session_scope,
    sessions_since,
)
from memapp.lifecycle.model_call import ModelFailed, ask_for_changes
from memapp.lifecycle.models import (
    ConsolidationRun,
    ConsolidationState,
    Proposal,
    ProposalChange,
    Session,
    TranscriptEntry,
)
from memapp.lifecycle.proposals import do_propose_changes
from memapp.lifecycle.sessions import check_with_gate, entry_from_row
from memapp.lifecycle.store_proposals import (
    INDEX_KEY,
    ApplyRefused,
    ask_check,
    do_apply_store_proposal,
    edited_check,
)
from memapp.memdir.consolidate_lock import (
    LockUnavailable,
    read_lock,
    release_lock,
    restore_lock,
    try_acquire_lock,
)
from memapp.memdir.consolidation import (
    CONSOLIDATION_SYSTEM,
    DISTILLATION_SYSTEM,
    DUPLICATE_THRESHOLD,
    DatedMemory,
    build_consolidation_request,
    build_distillation_request,
    offline_consolidation,
    offline_distillation,
    replaced_unsure_dates,
    take_index_change,
)
from memapp.memdir.daily_logs import LogEntry
from memapp.memdir.extraction import Dropped, ProposedChange, Target
from memapp.memdir.extraction import validate_changes as validate_topic_changes
from memapp.memdir.frontmatter import parse_memory
from memapp.memdir.index import index_health, index_size, parse_index_entries
from memapp.memdir.index_plan import TopicFile, index_checks, plan_index
from memapp.memdir.lint import near_duplicates, similar_to
from memapp.memdir.scan import MemoryHeader, detect_type_form, format_manifest
from memapp.memdir.secret_gate import configure as configure_secret_gate
from memapp.memdir.secret_gate import scan_for_push
from memapp.memdir.store_files import CHECKSUM_PREFIX, checksum, read_file
from memapp.memdir.transcripts import render_messages
from memapp.stores.actions import new_memory_path
from memapp.stores.events import record_event
from memapp.stores.flags import get_flags, index_caps
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Store

__all__ = [
    "Cancelled",
    "ConsolidationFailed",
    "consolidation_request",
    "do_cancel_consolidation",
    "run_consolidation",
    "orient",
]

log = logging.getLogger(__name__)

STALE_RUN = datetime.timedelta(minutes=30)  # a run older than this was lost with its worker
MAX_TOKENS = 16_000
MAX_CHANGES = 200
MANIFEST_CHARS = 100_000
BODY_CHARS = 8_000
BODIES_CHARS = 100_000
SESSIONS_CHARS = 40_000
SESSION_LINES = 40
LOGS_CHARS = 60_000
ACTIVE = (ConsolidationRun.Status.QUEUED, ConsolidationRun.Status.RUNNING)


class ConsolidationFailed(Exception):
    """The model could not be asked, or did not answer with the tool, in every attempt."""


class Cancelled(Exception):  # noqa: N818 (a run's end, not an error)
    """Someone cancelled the run while it ran; raised at its next step, before it proposes."""


def do_cancel_consolidation(store: Store) -> ConsolidationRun | None:
    """Cancel the store's queued or running consolidation: a queued run ends at once, a running
    one at its next step, where the lock's mtime and the last run's time are put back and
    nothing is proposed. The run cancelled, or None when none was active."""
    with transaction.atomic():
        Store.objects.select_for_update().filter(pk=store.pk).exists()
        run = ConsolidationRun.objects.filter(store=store, status__in=ACTIVE).first()
        if run is None:
            return None
        if run.status == ConsolidationRun.Status.QUEUED:
            run.gate = "cancelled"
            run.finish(ConsolidationRun.Outcome.CANCELLED)
        else:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested"])
    return run


def _check_cancelled(run: ConsolidationRun, proposals: list[Proposal]) -> None:
    """Raise Cancelled when the run was cancelled, taking back what it proposed so far."""
    if ConsolidationRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
        Proposal.objects.filter(pk__in=[p.pk for p in proposals]).delete()
        raise Cancelled


# --- the run ----------------------------------------------------------------------------------


def _reviewer(store: Store, requested_by):
    """Who reviews the proposals: the owner of a private or agent store; for a team store
    the member who asked, else the member with the latest session in the project."""
    if store.kind != Store.Kind.TEAM:
        return store.owner
    members = store.project.members.all() if store.project is not None else []
    if requested_by is not None and requested_by in members:
        return requested_by
    latest = (
        Session.objects.filter(project=store.project, owner__in=members)
        .order_by("-last_entry_at")
        .select_related("owner")
        .first()
    )
    if latest is not None:
        return latest.owner
    return store.project.members.order_by("pk").first() if store.project is not None else None


def _enclosing_holder(store: Store) -> int | None:
    """A team store on this host lies inside a private memory dir, and a local agent
    consolidating that dir consolidates its `team/` too: its live lock holds this one."""
    if store.kind != Store.Kind.TEAM or store.origin != Store.Origin.DISCOVERED:
        return None
    for parent in Path(store.path).parents:
        state = read_lock(parent)
        if state.held():
            return state.pid
        if parent.name == "memory":
            break
    return None


def _skip(run: ConsolidationRun, gate: str, holder: int | None = None) -> list[Proposal]:
    run.gate, run.lock_holder = gate, holder
    run.finish(ConsolidationRun.Outcome.SKIPPED)
    return []


def _run(run: ConsolidationRun, flags: dict) -> list[Proposal]:
    store = run.store
    if not flags["consolidation"]:
        return _skip(run, "flag_off")
    if not flags["auto_memory"]:  # memory off means off, "Consolidate now" included
        return _skip(run, "memory_off")
    reviewer = _reviewer(store, run.requested_by)
    if reviewer is None:
        return _skip(run, "no_reviewer")
    if not Path(store.path).is_dir():
        return _skip(run, "no_directory")
    holder = _enclosing_holder(store)
    if holder is not None:
        return _skip(run, "locked", holder)
    try:
        taken = try_acquire_lock(store.path)
    except LockUnavailable as exc:
        log.warning("consolidation of %s: %s", store.path, exc)
        run.lock_problem = str(exc)[:200]
        return _skip(run, "lock_unavailable")
    if taken is None:
        return _skip(run, "locked", read_lock(store.path).pid)
    prior, before = taken
    if before.problem:
        log.warning("%s/.consolidate-lock %s: treated as stale", store.path, before.problem)
        run.lock_problem = before.problem
    acquired = time.time()
    run.gate, run.owner = "passed", reviewer
    state, _ = ConsolidationState.objects.get_or_create(store=store)
    last_run_at = state.last_run_at
    since = latest_consolidation(prior, last_run_at)
    ConsolidationState.objects.filter(pk=store.pk).update(last_run_at=timezone.now())
    try:
        proposals = _work(run, flags, reviewer, state, since)
    except BaseException:
        restore_lock(store.path, prior)
        ConsolidationState.objects.filter(pk=store.pk).update(last_run_at=last_run_at)
        raise
    release_lock(store.path, acquired)
    return proposals


def _record(run: ConsolidationRun, started: float) -> None:
    kinds = [
        k for k, on in (("distillation", run.distill), ("consolidation", run.consolidate)) if on
    ]
    record_event(
        "consolidation_run",
        store=run.store,
        user=run.owner or run.requested_by,
        trigger=run.trigger,
        gate=run.gate or None,
        outcome=run.outcome,
        kinds=kinds,
        sessions=run.sessions,
        log_entries=run.log_entries,
        proposed=run.proposed,
        dropped=run.dropped,
        selector=run.selector or None,
        index_lines_before=run.index_before.get("lines"),
        index_bytes_before=run.index_before.get("bytes"),
        index_lines_after=run.index_after.get("lines"),
        index_bytes_after=run.index_after.get("bytes"),
        stale=run.stale,
        lock_holder=run.lock_holder,
        duration_ms=round((time.monotonic() - started) * 1000),
        error=run.error or None,
    )


def run_consolidation(run_id: int) -> dict:
    """Carry out one queued run; a summary of what it did (the task's result)."""
    if not ConsolidationRun.objects.claim(run_id):
        return {"run": run_id, "store": None, "outcome": "not queued"}
    run = ConsolidationRun.objects.select_related("store__project", "requested_by").get(pk=run_id)
    started = time.monotonic()
    flags = get_flags(run.store.project)
    proposals: list[Proposal] = []
    try:
        proposals = _run(run, flags)
    except Cancelled:  # the lock and the last run's time were put back by _run
        run.gate = "cancelled"
        run.finish(ConsolidationRun.Outcome.CANCELLED)
    except ConsolidationFailed as exc:
        run.fail(str(exc))
    except Exception as exc:  # a bug must not leave the store's queue stuck
        log.exception("consolidation run %s failed", run.pk)
        run.fail(f"{type(exc).__name__}: {exc}")
    _record(run, started)
    if proposals and flags["lifecycle_apply"] == "auto":
        for proposal in proposals:
            try:
                do_apply_store_proposal(proposal, run.owner, decision="auto")
            except ApplyRefused as exc:  # risky, or the store busy: it waits for a person
                log.info("proposal %s left for review: %s", proposal.pk, exc)
    return {
        "run": run.pk,
        "store": run.store_id,
        "gate": run.gate,
        "outcome": run.outcome,
        "proposals": [p.pk for p in proposals],
        "error": run.error,
    }


# --- what the run reads -----------------------------------------------------------------------


@dataclass
class Orientation:
    """The store as the run found it, after a rescan: what its first phase, orient, reads
    (docs/design.md §14.7)."""

    store: Store
    root: Path
    scope: str
    caps: tuple[int, int]
    index: str
    rows: list[dict]
    topics: dict[str, TopicFile]
    form: str
    checksums: dict[str, str] = field(default_factory=dict)

    @property
    def targets(self) -> dict[str, Target]:
        return {self.scope: Target(self.root, tuple(self.store.exclude))}


def _day(mtime_ms: int, zone: datetime.tzinfo) -> datetime.date:
    return datetime.datetime.fromtimestamp(mtime_ms / 1000, tz=zone).date()


def _measure(text: str) -> dict[str, int]:
    lines, size = index_size(text)
    return {"lines": lines, "bytes": size}


def orient(store: Store, flags: dict) -> Orientation:
    """The store as a run reads it once: rescanned under its lock, its index, its rows newest
    first and every file's checksum, so the proposal is checked against what the run saw."""
    with store_lock(store):
        rescan_store(store)
        root = Path(store.path)
        try:
            raw_index = read_file(root / INDEX_KEY)
        except FileNotFoundError:
            raw_index = b""
    rows = list(
        store.files.order_by("-mtime_ms", "path").values(
            "path", "name", "description", "type", "mtime_ms", "size", "sha256", "problem"
        )
    )
    # The lints' lists are empty in most rows: only the others' are read (and decoded).
    linted = {
        path: (dates, sections)
        for path, dates, sections in store.files.exclude(
            relative_dates=[], missing_sections=[]
        ).values_list("path", "relative_dates", "missing_sections")
    }
    for row in rows:
        row["relative_dates"], row["missing_sections"] = linted.get(row["path"], ([], []))
    zone = timezone.get_current_timezone()
    topics = {
        row["path"]: TopicFile(
            row["path"],
            row["name"] or row["path"].rsplit("/", 1)[-1].removesuffix(".md"),
            " ".join((row["description"] or "").split()),
            row["mtime_ms"],
            _day(row["mtime_ms"], zone),
        )
        for row in rows
    }
    scope = "team" if store.kind == Store.Kind.TEAM else "private"
    checksums = {row["path"]: CHECKSUM_PREFIX + row["sha256"] for row in rows}
    checksums[INDEX_KEY] = checksum(raw_index) if raw_index else ""
    return Orientation(
        store,
        root,
        scope,
        index_caps(flags),
        raw_index.decode("utf-8", "replace"),
        rows,
        topics,
        detect_type_form(store.path),
        checksums,
    )


def _manifest(orientation: Orientation) -> str:
    headers = [
        MemoryHeader(
            r["path"],
            r["mtime_ms"],
            r["size"],
            r["name"] or None,
            r["description"] or None,
            r["type"] or None,
            None,
            r["problem"] or None,
        )
        for r in orientation.rows
    ]
    return format_manifest(headers)[:MANIFEST_CHARS]


def _read_body(orientation: Orientation, key: str) -> str:
    try:
        return read_file(orientation.root / key).decode("utf-8", "replace")
    except OSError:
        return ""


def _bodies(orientation: Orientation, first: list[str]) -> list[tuple[str, str]]:
    """The full text of the memories most likely to need work (`first`), then the newest,
    within a budget."""
    chosen, total = [], 0
    order = list(dict.fromkeys([*first, *(r["path"] for r in orientation.rows)]))
    for key in order:
        text = _read_body(orientation, key)[:BODY_CHARS]
        if total + len(text) > BODIES_CHARS:
            break
        chosen.append((key, text))
        total += len(text)
    return chosen


def _duplicates(orientation: Orientation) -> list[tuple[str, str, float]]:
    pairs = [(key, topic.description) for key, topic in orientation.topics.items()]
    return near_duplicates(pairs, DUPLICATE_THRESHOLD)


def _findings(orientation: Orientation, duplicates) -> tuple[list[str], list[str]]:
    """The health lints as lines for the request, and the files they name (first in line for
    their full text)."""
    health = index_health(
        orientation.root,
        files=list(orientation.topics),
        max_lines=orientation.caps[0],
        max_bytes=orientation.caps[1],
    )
    lines = [
        f"MEMORY.md: {health.line_count} lines, {health.byte_count:,} bytes"
        + (" (over its caps: agents do not see its end)" if health.was_truncated else "")
    ]
    named: list[str] = []
    if health.missing_targets:
        missing = [e.path or e.target for e in health.missing_targets]
        lines.append("entries pointing at missing files: " + ", ".join(missing[:50]))
    if health.unindexed:
        lines.append("topic files the index does not list: " + ", ".join(health.unindexed[:50]))
    if health.long_entries:
        lines.append(f"{len(health.long_entries)} index entries longer than 200 characters")
    for row in orientation.rows:
        if row["relative_dates"]:
            dates = ", ".join(f"“{d}”" for d in row["relative_dates"][:5])
            lines.append(f"relative dates in {row['path']}: {dates}")
            named.append(row["path"])
        if row["missing_sections"]:
            lines.append(f"{row['path']} lacks {' and '.join(row['missing_sections'])}")
        if row["problem"]:
            lines.append(f"{row['path']}: {row['problem']}")
    for a, b, score in duplicates[:50]:
        lines.append(f"near-duplicates: {a} and {b} ({score:.2f})")
        named += [a, b]
    return lines, named


def _sessions_text(
    store: Store, since: datetime.datetime | None, reviewer
) -> tuple[str, list[Session]]:
    """The user's side of the sessions since the last run, newest first, within a budget. For
    a team store only the reviewer's own: what one member said in a session is never put in
    front of another (all members' sessions still count for the gates)."""
    sessions = Session.objects.filter(session_scope(store))
    if store.kind == Store.Kind.TEAM:
        sessions = sessions.filter(owner=reviewer)
    if since is not None:
        sessions = sessions.filter(last_entry_at__gt=since)
    chosen = list(sessions.order_by("-last_entry_at")[:20])
    check_with_gate(chosen)
    parts, total = [], 0
    for session in chosen:
        rows = TranscriptEntry.objects.filter(
            session=session, gate_checked=True, is_user_prose=True, is_sidechain=False
        ).order_by("-seq")[:SESSION_LINES]
        text = render_messages(entry_from_row(row) for row in reversed(rows))
        if not text:
            continue
        title = f" ({session.title})" if session.title else ""
        part = f"### Session {session.session_id}{title}\n\n{text}"
        if total + len(part) > SESSIONS_CHARS:
            break
        parts.append(part)
        total += len(part)
    return "\n\n".join(parts), chosen


def _logs_text(entries: list[LogEntry]) -> str:
    """The log entries as the model reads them, leaving out any that holds a secret (both
    layers, docs/design.md §10a): what the model is not shown it cannot propose."""
    lines, total = [], 0
    for entry in entries:
        if _push_gate(entry.text):
            continue
        time_ = f"{entry.time} " if entry.time else ""
        tag = f"[{entry.type}] " if entry.type else ""
        line = f"- {entry.day.isoformat()} {time_}{tag}{entry.text}"
        if total + len(line) > LOGS_CHARS:
            break
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


# --- the model --------------------------------------------------------------------------------


def _ask_model(run: ConsolidationRun, system: str, text: str) -> list:
    """The model's `changes` (a run may ask twice: distillation, then consolidation, each call
    counted); ConsolidationFailed when it gave none after its attempts."""
    try:
        return ask_for_changes(
            run,
            model=settings.MEMHUB_CONSOLIDATION_MODEL,
            timeout=settings.MEMHUB_CONSOLIDATION_TIMEOUT,
            max_tokens=MAX_TOKENS,
            system=system,
            text=text,
        )
    except ModelFailed as exc:
        raise ConsolidationFailed(str(exc)) from None


def _push_gate(text: str) -> list:
    """Both layers of the secret filter: what is proposed may reach team memory."""
    return scan_for_push({"proposal.md": text}).get("proposal.md", [])


@dataclass
class Answer:
    """Validated changes, the ones dropped, and what the run found for the reviewer."""

    changes: list[ProposedChange]
    dropped: list[Dropped]
    findings: dict


def _validated(
    orientation: Orientation, raw: object
) -> tuple[list[ProposedChange], str | None, list]:
    others, index, dropped = take_index_change(raw, secret_check=_push_gate)
    try:
        changes, more = validate_topic_changes(
            others, orientation.targets, max_changes=MAX_CHANGES, secret_check=_push_gate
        )
    except ValueError as exc:
        raise ConsolidationFailed(f"bad tool input: {exc}") from None
    return changes, index, [*dropped, *more]


def _with_index(
    orientation: Orientation, changes: list[ProposedChange], model_index: str | None, reason: str
) -> tuple[list[ProposedChange], dict]:
    """The changes, and the index they leave planned by memhub's rules (the model's own when it
    gave one), as a last change when it differs from the index now."""
    topics = dict(orientation.topics)
    now_ms, today = int(time.time() * 1000), timezone.localdate()
    changed, created = [], []
    for change in changes:
        if change.action == "delete":
            topics.pop(change.file, None)
            continue
        topics[change.file] = TopicFile(
            change.file, change.name, " ".join(change.description.split()), now_ms, today
        )
        changed.append(change.file)
        if change.action == "create":
            created.append(change.file)
    if model_index is None:
        plan = plan_index(
            orientation.index, topics, changed=changed, add=created, caps=orientation.caps
        )
        why = plan.reason()
    else:
        plan = plan_index(model_index, topics, add=created, caps=orientation.caps)
        adjusted = plan.text != model_index.strip("\n") + "\n"
        why = reason + (f" (memhub adjusted it — {plan.reason()})" if adjusted else "")
    findings = {"left_out": plan.left_out[:200]}
    if plan.text == orientation.index:
        return changes, findings
    index_change = ProposedChange(
        "update", orientation.scope, INDEX_KEY, body=plan.text, reason=why
    )
    return [*changes, index_change], findings


def _index_reason(raw: object) -> str:
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and str(item.get("file", "")).removeprefix("./") == INDEX_KEY:
            return str(item.get("reason") or "the model's new index")[:2000]
    return "the model's new index"


def consolidation_request(
    orientation: Orientation,
    since: datetime.datetime | None,
    sessions_text: str,
    logs: str,
    duplicates: list[tuple[str, str, float]] | None = None,
) -> str:
    """The user message of the model call: the four phases' material from the orientation (the
    index, the manifest, the bodies the lints point at first, the lints with the
    near-`duplicates`, found here when not given), the sessions and the daily logs since the
    last run."""
    if duplicates is None:
        duplicates = _duplicates(orientation)
    lints, named = _findings(orientation, duplicates)
    return build_consolidation_request(
        today=timezone.localdate(),
        caps=orientation.caps,
        index=orientation.index,
        manifest=_manifest(orientation),
        bodies=_bodies(orientation, named),
        findings=lints,
        since=f"{since:%Y-%m-%d %H:%M} UTC" if since else "none has run yet",
        sessions=sessions_text,
        logs=logs,
    )


def _unsure_date_fixes(orientation: Orientation, changes: list[ProposedChange]) -> dict[str, str]:
    """The model's updates of memories with relative dates that drop a phrase which recurs or
    names no one day (file → why), to be ticked by a person only."""
    dated = {row["path"] for row in orientation.rows if row["relative_dates"]}
    unsure = {}
    for change in changes:
        if change.action == "update" and change.file in dated:
            new = f"{change.description}\n{change.body}"
            day = orientation.topics[change.file].day
            if why := replaced_unsure_dates(_read_body(orientation, change.file), new, day):
                unsure[change.file] = why
    return unsure


def _consolidation_answer(
    run: ConsolidationRun,
    flags: dict,
    orientation: Orientation,
    since,
    sessions_text: str,
    logs: str,
) -> Answer:
    if settings.ANTHROPIC_API_KEY:
        run.selector = "llm"
        duplicates = _duplicates(orientation)  # offline_consolidation finds its own
        text = consolidation_request(orientation, since, sessions_text, logs, duplicates)
        raw = _ask_model(run, CONSOLIDATION_SYSTEM, text)
        changes, index, dropped = _validated(orientation, raw)
        changes, found = _with_index(orientation, changes, index, _index_reason(raw))
        found["unsure"] = _unsure_date_fixes(orientation, changes)
        return Answer(changes, dropped, {**found, "duplicates": [list(d) for d in duplicates[:50]]})
    run.selector = "offline"
    dated = []
    for row in orientation.rows:
        if row["type"] != "project" or not row["relative_dates"]:
            continue
        memory = parse_memory(_read_body(orientation, row["path"]), path=row["path"])
        dated.append(
            DatedMemory(
                row["path"],
                memory.name or orientation.topics[row["path"]].title,
                memory.description or "",
                "project",
                memory.body,
                orientation.topics[row["path"]].day,
            )
        )
    result = offline_consolidation(
        scope=orientation.scope,
        index=orientation.index,
        files=orientation.topics,
        dated=dated,
        caps=orientation.caps,
    )
    findings = {
        "duplicates": [list(d) for d in result.duplicates[:50]],
        "left_out": result.index.left_out[:200] if result.index else [],
        "unresolved": [list(u) for u in result.unresolved],
        "unsure": result.unsure,
    }
    return Answer(result.changes, [], findings)


def _distillation_answer(
    run: ConsolidationRun, orientation: Orientation, entries: list[LogEntry]
) -> Answer:
    if settings.ANTHROPIC_API_KEY:
        run.selector = "llm"
        words = " ".join(entry.text for entry in entries)
        likely = similar_to(words, ((k, t.description) for k, t in orientation.topics.items()), 0.3)
        text = build_distillation_request(
            today=timezone.localdate(),
            caps=orientation.caps,
            index=orientation.index,
            manifest=_manifest(orientation),
            bodies=_bodies(orientation, likely)[:10],
            logs=_logs_text(entries),
        )
        raw = _ask_model(run, DISTILLATION_SYSTEM, text)
        changes, index, dropped = _validated(orientation, raw)
        changes, found = _with_index(orientation, changes, index, _index_reason(raw))
        return Answer(changes, dropped, found)
    run.selector = "offline"
    taken: set[str] = set()

    def name_file(name: str, memory_type: str) -> str:
        key = new_memory_path(orientation.root, name, memory_type, orientation.form)
        stem, n = key.removesuffix(".md"), 2
        while key in taken:
            key, n = f"{stem}-{n}.md", n + 1
        taken.add(key)
        return key

    result = offline_distillation(
        scope=orientation.scope,
        entries=entries,
        existing=[(k, t.description) for k, t in orientation.topics.items()],
        index=orientation.index,
        files=orientation.topics,
        name_file=name_file,
        caps=orientation.caps,
        today=timezone.localdate(),
        secret_check=_push_gate,
    )
    findings = {"skipped": [list(s) for s in result.skipped], "unsure": result.unsure}
    return Answer(result.changes, [], findings)


# --- proposals --------------------------------------------------------------------------------


def _propose(
    kind: str,
    orientation: Orientation,
    reviewer,
    answer: Answer,
    *,
    sources: list[dict],
    sessions: list[Session],
) -> Proposal | None:
    """Store the proposal, each change with the checks a person needs: an index's own checks,
    a file changed since the run read it, and a date fix whose phrase names no one day, each
    marked as such (never ticked for them)."""
    proposal = do_propose_changes(
        kind,
        orientation.store,
        reviewer,
        answer.changes,
        dropped=[d.as_dict() for d in answer.dropped],
        sources=sources,
        sessions=sessions,
    )
    if proposal is None:
        return None
    keys_after = set(orientation.topics)
    for change in answer.changes:
        if change.action == "delete":
            keys_after.discard(change.file)
        elif change.file != INDEX_KEY:
            keys_after.add(change.file)
    had_entries = bool(parse_index_entries(orientation.index))
    unsure = answer.findings.get("unsure", {})
    rows = list(proposal.changes.all())
    for row in rows:
        if row.key == INDEX_KEY:
            row.checks = index_checks(row.body, keys_after, orientation.caps, had_entries)
            row.base_text = orientation.index  # an edit since is merged, so no "edited" check
            continue
        if row.base_checksum != orientation.checksums.get(row.key, ""):
            row.checks = [*row.checks, edited_check()]
        if row.key in unsure:
            row.checks = [*row.checks, ask_check("date_fix", unsure[row.key])]
    ProposalChange.objects.bulk_update(rows, ["checks", "base_text"])
    return proposal


def _without_index(answer: Answer, flags: dict) -> Answer:
    """With `skip_index`, memhub's own writes leave MEMORY.md alone: no index change."""
    if flags["skip_index"]:
        answer.changes = [c for c in answer.changes if c.file != INDEX_KEY]
    return answer


def _work(run, flags, reviewer, state: ConsolidationState, since) -> list[Proposal]:
    store = run.store
    configure_secret_gate(entropy=flags["secrets_entropy_plugins"])
    orientation = orient(store, flags)
    run.index_before = run.index_after = _measure(orientation.index)
    stale_ms = int((time.time() - settings.MEMHUB_STALE_DAYS * 86400) * 1000)
    run.stale = sum(row["mtime_ms"] < stale_ms for row in orientation.rows)
    proposals: list[Proposal] = []
    entries, cursor = new_log_entries(store, state.log_cursor) if run.distill else ([], {})
    run.log_entries = len(entries)
    findings: dict = {}
    _check_cancelled(run, proposals)
    if entries:
        answer = _without_index(_distillation_answer(run, orientation, entries), flags)
        _check_cancelled(run, proposals)
        first, last = {}, {}
        for entry in entries:
            first.setdefault(entry.key, entry.number)
            last[entry.key] = entry.number
        sources = [{"log": key, "from": first[key], "to": last[key]} for key in first]
        with transaction.atomic():
            proposal = _propose(
                Proposal.Kind.DISTILLATION,
                orientation,
                reviewer,
                answer,
                sources=sources,
                sessions=[],
            )
            ConsolidationState.objects.filter(pk=store.pk).update(log_cursor=cursor)
        _count(run, answer, proposal, proposals)
        findings["distillation"] = answer.findings
    if run.consolidate:
        sessions_text, sessions = _sessions_text(store, since, reviewer)
        run.sessions = len(sessions_since(store, since))
        logs = _logs_text(_logs_since(entries, store, since))
        answer = _consolidation_answer(run, flags, orientation, since, sessions_text, logs)
        answer = _without_index(answer, flags)
        _check_cancelled(run, proposals)
        sources = [{"session": s.pk, "session_id": s.session_id} for s in sessions]
        with transaction.atomic():
            proposal = _propose(
                Proposal.Kind.CONSOLIDATION,
                orientation,
                reviewer,
                answer,
                sources=sources,
                sessions=sessions,
            )
        _count(run, answer, proposal, proposals)
        findings["consolidation"] = answer.findings
        index = next((c for c in answer.changes if c.file == INDEX_KEY), None)
        if index is not None:
            run.index_after = _measure(index.body)
    run.findings = findings
    run.finish(ConsolidationRun.Outcome.PROPOSED if proposals else ConsolidationRun.Outcome.NOTHING)
    run.proposals.set(proposals)
    return proposals


def _logs_since(entries: list[LogEntry], store: Store, since) -> list[LogEntry]:
    """The daily-log entries of the days since the last run, for the gather phase (the ones
    this run distills included)."""
    if entries or since is None:
        return entries
    floor = timezone.localtime(since).date()
    return [e for day in reversed(store_logs(store)) if day.day >= floor for e in day.entries]


def _count(run, answer: Answer, proposal: Proposal | None, proposals: list[Proposal]) -> None:
    run.proposed += len(answer.changes)
    run.dropped += len(answer.dropped)
    run.dropped_changes = [*run.dropped_changes, *(d.as_dict() for d in answer.dropped)]
    if proposal is not None:
        proposals.append(proposal)
