"""Extraction (docs/design.md §14.4–§14.5): from the new turns of a person's sessions to a
proposal of memory changes, with Claude Code's gates.

- Requests: a session asks for a run every `extraction_every_n_turns` turns (and when it ends).
  One run per store at a time: a request while one is queued is already served, one while a run
  is busy queues a single trailing run, which reads every session with new entries whatever its
  turn count.
- Gates, per session, on the entries after its cursor: a session that is not interactive
  (unless `extraction_non_interactive`), one where the agent wrote into its memory dir itself,
  and one with no user prose are skipped, and their cursor moves.
- With an API key: one Messages API call forcing the `propose_memory_changes` tool; a timeout,
  an overload or a bad tool input is tried once more, then the run fails (and shows as failed).
  Without a key: explicit requests ("remember that …") are still proposed.
- The cursors move in the transaction that stores the proposal, so a failed run reads the same
  entries again next time.
- Daily-log mode (the `daily_log_mode` flag, with consolidation on): what would have been
  proposed is appended to the day's log of the private store instead, one line per memory,
  for the distillation to turn into topic files (docs/design.md §14.8).
"""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from memapp.lifecycle.daily_logs import do_append_daily_log
from memapp.lifecycle.model_call import ModelFailed, ask_for_changes
from memapp.lifecycle.models import ExtractionRun, Proposal, Session, TranscriptEntry
from memapp.lifecycle.proposals import do_apply_proposal, do_propose_changes
from memapp.lifecycle.sessions import check_with_gate, entry_from_row
from memapp.memdir.extraction import (
    EXTRACTION_SYSTEM,
    Dropped,
    ProposedChange,
    Target,
    build_request,
    derivable,
    explicit_requests,
    offline_change,
    validate_changes,
)
from memapp.memdir.scan import detect_type_form, format_manifest
from memapp.memdir.secret_gate import configure as configure_secret_gate
from memapp.memdir.secret_gate import scan_for_push
from memapp.memdir.secret_rules import REDACTED
from memapp.memdir.store_files import FileRejected
from memapp.memdir.transcripts import Entry, count_turns, render_messages, wrote_memory
from memapp.stores.actions import new_memory_path
from memapp.stores.events import record_event
from memapp.stores.flags import get_flags
from memapp.stores.models import Store
from memapp.stores.prompting import team_store_for
from memapp.stores.recall import store_recall_index

__all__ = ["STALE_RUN", "ExtractionFailed", "run_extraction", "wants_extraction"]

log = logging.getLogger(__name__)

STALE_RUN = timedelta(minutes=15)  # a run older than this was lost with its worker
MAX_TOKENS = 8192
LIKELY_BODIES = 5  # existing memories sent in full, those most like the new messages
MAX_BODY_CHARS = 8_000
MAX_MESSAGES_CHARS = 150_000
MAX_LOG_TEXT = 1_000  # characters of one daily-log entry made from a memory


class ExtractionFailed(Exception):
    """The model could not be asked, or did not answer with the tool, in every attempt."""


def wants_extraction(session: Session, flags: dict, final: bool) -> bool:
    """Whether a session's new turns ask for a run: the `extraction` and `auto_memory` flags
    (memory off means off), the session's kind, and every N turns (or its end, with anything
    new)."""
    if not (flags["extraction"] and flags["auto_memory"]) or session.store_id is None:
        return False
    if session.interactive is False and not flags["extraction_non_interactive"]:
        return False
    if session.turns_pending >= flags["extraction_every_n_turns"]:
        return True
    return final and session.turns_pending > 0


@dataclass
class Window:
    """One session's entries after its cursor, up to `upto`, and the gate's verdict."""

    session: Session
    upto: int
    rows: list[TranscriptEntry]
    entries: list[Entry]
    verdict: str  # read, non_interactive, memory_written, no_prose

    def as_dict(self) -> dict:
        return {
            "session": self.session.pk,
            "session_id": self.session.session_id,
            "from": self.session.extracted_through + 1,
            "to": self.upto,
            "verdict": self.verdict,
        }


def _verdict(session: Session, entries: list[Entry], flags: dict) -> str:
    if session.interactive is False and not flags["extraction_non_interactive"]:
        return "non_interactive"
    memory_dirs = [session.memory_dir, session.store.path if session.store else None]
    if any(wrote_memory(entries, directory) for directory in memory_dirs if directory):
        return "memory_written"
    if not count_turns(entries):
        return "no_prose"
    return "read"


def _windows(run: ExtractionRun, flags: dict) -> list[Window]:
    sessions = Session.objects.filter(
        owner=run.owner, store=run.store, extracted_through__lt=F("entry_count")
    ).select_related("store")
    if not run.trailing:
        every = flags["extraction_every_n_turns"]
        sessions = sessions.filter(Q(turns_pending__gte=every) | Q(ended_at__isnull=False))
    sessions = list(sessions.order_by("started_at", "pk"))
    check_with_gate(sessions)
    windows = []
    for session in sessions:
        upto = session.entry_count
        rows = list(
            session.entries.filter(
                seq__gt=session.extracted_through, seq__lte=upto, gate_checked=True
            ).order_by("seq")
        )
        entries = [entry_from_row(row) for row in rows]
        windows.append(Window(session, upto, rows, entries, _verdict(session, entries, flags)))
    return windows


@dataclass
class Answer:
    changes: list[ProposedChange] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    lines: dict[int, list[int]] = field(default_factory=dict)  # session pk → source entry seqs


def _targets(store: Store, team: Store | None) -> dict[str, Target]:
    targets = {"private": Target(Path(store.path), tuple(store.exclude))}
    if team is not None:
        targets["team"] = Target(Path(team.path), tuple(team.exclude))
    return targets


def _push_gate(text: str) -> list:
    """Both layers of the secret filter: a proposal may go to team memory."""
    return scan_for_push({"proposal.md": text}).get("proposal.md", [])


def _offline(
    store: Store, read: list[Window], today: datetime.date
) -> tuple[list, dict, list[Dropped]]:
    """Explicit requests as changes (dicts, as a model would give them) and their lines; the
    requests for what the code, git or the session records are dropped, even though asked."""
    root, form = Path(store.path), detect_type_form(store.path)
    raw, lines, taken, dropped = [], {}, set(), []
    for window in read:
        seq_of = {row.key: row.seq for row in window.rows}
        for request in explicit_requests(window.entries):
            what = derivable(request.text)
            if what is not None or REDACTED in request.text:
                reason = (
                    f"not kept even though asked: {what} is recorded elsewhere"
                    if what is not None
                    else "not kept even though asked: it was a secret (redacted), which no "
                    "memory keeps"
                )
                dropped.append(Dropped(len(raw) + len(dropped), request.text[:200], reason))
                continue
            change = offline_change(request, "", today)
            key = new_memory_path(root, change.name, change.type, form)
            stem, n = key.removesuffix(".md"), 2
            while key in taken:
                key, n = f"{stem}-{n}.md", n + 1
            taken.add(key)
            raw.append({**change.as_dict(), "file": key})
            lines.setdefault(window.session.pk, []).append(seq_of[request.entry])
    return raw, lines, dropped


def _likely_bodies(store: Store, query: str, limit: int) -> list[tuple[str, str, str]]:
    index = store_recall_index(store, limit)
    picked = index.scores(query[:4000], limit=LIKELY_BODIES)
    bodies = []
    for header, _score in picked:
        try:
            text = (Path(store.path) / header.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        bodies.append((store.kind, header.path, text[:MAX_BODY_CHARS]))
    return bodies


def _request_text(
    store: Store, team: Store | None, read: list[Window], flags: dict, today: datetime.date
) -> str:
    stores = [("private", store)] + ([("team", team)] if team is not None else [])
    manifests = {
        scope: format_manifest(store_recall_index(s, flags["scan_max_files"]).headers)
        for scope, s in stores
    }
    parts = []
    for window in read:
        title = f" ({window.session.title})" if window.session.title else ""
        parts.append(f"### Session {window.session.session_id}{title}\n")
        parts.append(render_messages(window.entries))
    messages = "\n".join(parts)[-MAX_MESSAGES_CHARS:]
    prose = "\n".join(e.prose for w in read for e in w.entries if e.is_user_prose)
    bodies = [
        (scope, key, text)
        for scope, s in stores
        for _, key, text in _likely_bodies(s, prose, flags["scan_max_files"])
    ]
    return build_request(manifests, bodies, messages, today)


def _ask_model(run: ExtractionRun, text: str) -> list:
    """The model's `changes`; ExtractionFailed when it gave none after its attempts."""
    run.attempts = 0
    try:
        return ask_for_changes(
            run,
            model=settings.MEMHUB_EXTRACTION_MODEL,
            timeout=settings.MEMHUB_EXTRACTION_TIMEOUT,
            max_tokens=MAX_TOKENS,
            system=EXTRACTION_SYSTEM,
            text=text,
        )
    except ModelFailed as exc:
        raise ExtractionFailed(str(exc)) from None


def _answer(run: ExtractionRun, read: list[Window], flags: dict, team: Store | None) -> Answer:
    store, today = run.store, timezone.localdate()
    targets = _targets(store, team)
    unasked: list[Dropped] = []
    if settings.ANTHROPIC_API_KEY:
        run.selector = "llm"
        raw = _ask_model(run, _request_text(store, team, read, flags, today))
        lines = {
            w.session.pk: [r.seq for r in w.rows if r.is_user_prose and not r.is_sidechain]
            for w in read
        }
    else:
        run.selector = "offline"
        raw, lines, unasked = _offline(store, read, today)
    configure_secret_gate(entropy=flags["secrets_entropy_plugins"])
    try:
        changes, dropped = validate_changes(raw, targets, secret_check=_push_gate)
    except ValueError as exc:
        raise ExtractionFailed(f"bad tool input: {exc}") from None
    answer = Answer(changes, [*dropped, *unasked], lines)
    answer.lines = {pk: seqs for pk, seqs in lines.items() if seqs}
    return answer


def _log_line(change: ProposedChange) -> str:
    """A memory as one daily-log entry: what it is, then its substance, on one line."""
    body = " ".join(change.body.split())
    text = f"{change.description.strip()}: {body}" if change.description.strip() else body
    return text if len(text) <= MAX_LOG_TEXT else text[: MAX_LOG_TEXT - 1] + "…"


def _append_to_log(run: ExtractionRun, answer: Answer) -> int:
    """Daily-log mode: each created or updated memory appended to today's log of the private
    store (a delete has no place in an append-only log); refused lines join the dropped."""
    appended = 0
    for n, change in enumerate(answer.changes):
        if change.action == "delete":
            continue
        try:
            do_append_daily_log(
                run.store,
                run.owner,
                text=_log_line(change),
                day=timezone.localdate(),
                memory_type=change.type,
            )
        except FileRejected as exc:
            answer.dropped.append(Dropped(n, change.file, f"not logged: {exc}"))
            continue
        appended += 1
    return appended


def _store_outcome(
    run: ExtractionRun,
    windows: list[Window],
    answer: Answer | None,
    team: Store | None,
    daily_log: bool = False,
) -> list[Proposal]:
    """Proposals (or, in daily-log mode, log lines), cursors and the run's outcome, in one
    transaction."""
    proposals: list[Proposal] = []
    with transaction.atomic():
        if answer is not None and daily_log:
            logged = _append_to_log(run, answer)
            run.proposed, run.dropped = logged, len(answer.dropped)
            run.dropped_changes = [d.as_dict() for d in answer.dropped]
            outcome = ExtractionRun.Outcome.LOGGED if logged else ExtractionRun.Outcome.NOTHING
        elif answer is not None:
            read = [w for w in windows if w.verdict == "read"]
            sources = [{**w.as_dict(), "lines": answer.lines.get(w.session.pk, [])} for w in read]
            dropped = [d.as_dict() for d in answer.dropped]
            for scope, store in (("private", run.store), ("team", team)):
                changes = [c for c in answer.changes if c.scope == scope]
                if store is None or not changes:
                    continue
                proposal = do_propose_changes(
                    Proposal.Kind.EXTRACTION,
                    store,
                    run.owner,
                    changes,
                    dropped=dropped if not proposals else [],
                    sources=sources,
                    sessions=[w.session for w in read],
                    run=run,
                )
                if proposal is not None:
                    proposals.append(proposal)
            run.proposed = len(answer.changes)
            run.dropped = len(answer.dropped)
            run.dropped_changes = [d.as_dict() for d in answer.dropped]
            outcome = (
                ExtractionRun.Outcome.PROPOSED if answer.changes else ExtractionRun.Outcome.NOTHING
            )
        else:
            outcome = ExtractionRun.Outcome.SKIPPED
        for window in windows:
            Session.objects.filter(pk=window.session.pk).update(
                extracted_through=Greatest(F("extracted_through"), window.upto),
                turns_pending=Greatest(F("turns_pending") - count_turns(window.entries), 0),
            )
        run.windows = [w.as_dict() for w in windows]
        run.messages = sum(len(w.rows) for w in windows if w.verdict == "read")
        run.finish(outcome)
    return proposals


def _record(run: ExtractionRun, started: float) -> None:
    record_event(
        "extraction_run",
        store=run.store,
        user=run.owner,
        outcome=run.outcome,
        trigger="trailing" if run.trailing else "turns",
        sessions=len(run.windows),
        messages=run.messages,
        proposed=run.proposed,
        dropped=run.dropped,
        selector=run.selector or None,
        duration_ms=round((time.monotonic() - started) * 1000),
        error=run.error or None,
    )


def run_extraction(run_id: int) -> dict:
    """Carry out one queued run; a summary of what it did (the task's result)."""
    if not ExtractionRun.objects.claim(run_id):
        return {"run": run_id, "store": None, "outcome": "not queued"}
    run = ExtractionRun.objects.select_related("store__project", "owner").get(pk=run_id)
    started = time.monotonic()
    flags = get_flags(run.store.project)
    try:
        windows = _windows(run, flags) if flags["extraction"] and flags["auto_memory"] else []
        read = [w for w in windows if w.verdict == "read"]
        team = team_store_for(run.owner, run.store.project) if flags["team_memory"] else None
        answer = _answer(run, read, flags, team) if read else None
        daily_log = flags["daily_log_mode"] and flags["consolidation"]
        proposals = _store_outcome(run, windows, answer, team, daily_log)
    except ExtractionFailed as exc:
        run.fail(str(exc))
        proposals = []
    except Exception as exc:  # a bug must not leave the store's queue stuck
        log.exception("extraction run %s failed", run.pk)
        run.fail(f"{type(exc).__name__}: {exc}")
        proposals = []
    _record(run, started)
    if proposals and flags["lifecycle_apply"] == "auto":
        for proposal in proposals:
            do_apply_proposal(proposal, run.owner, decision="auto")
    return {
        "run": run.pk,
        "store": run.store_id,
        "outcome": run.outcome,
        "proposals": [p.pk for p in proposals],
        "error": run.error,
    }
