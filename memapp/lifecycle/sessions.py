"""Session transcripts reaching memhub (docs/design.md §14.3): stored once per entry, redacted
before they are stored, private to their owner, pruned after the retention period, and
forgotten on request."""

from __future__ import annotations

import datetime
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memapp.lifecycle.models import Session, TranscriptEntry
from memapp.memdir.secret_gate import redact_with_gate
from memapp.memdir.session_summary import entry_tokens
from memapp.memdir.transcripts import (
    Entry,
    EntryError,
    ToolCall,
    count_turns,
    parse_entry,
    redact_entry,
    shrink_entry,
)
from memapp.stores.models import Store

__all__ = [
    "SESSION_ID_RE",
    "IngestResult",
    "check_with_gate",
    "do_forget_session",
    "do_ingest_entries",
    "entry_from_row",
    "prune_sessions",
    "skip_sentences",
]

SESSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")
MAX_TITLE = 300


@dataclass
class IngestResult:
    session: Session
    received: int = 0
    stored: int = 0
    duplicates: int = 0
    redacted: int = 0
    turns: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


# Why lines of a transcript were not kept, as the session page and the API say it.
_SKIP_SENTENCES = {
    "transcript_outside_home": (
        "The hook was given a transcript outside your home and Claude Code's config dir, so "
        "it did not read it"
    ),
    "transcript_missing": "The hook was given a transcript that does not exist (or none)",
    "not_json": "{n} line{s} of the transcript {were} not JSON",
    "not_object": "{n} line{s} of the transcript {were} not JSON objects",
    "binary": "{n} line{s} of the transcript {were} not UTF-8 text",
    "unknown_type": "{n} entr{ies} of a type memhub does not keep {were} passed over",
    "too_large": "{n} entr{ies} too large even with tool output cut {were} left out",
}


def skip_sentences(skipped: dict[str, int]) -> list[str]:
    """Each reason lines were not kept, in a sentence a person can act on."""
    sentences = []
    for reason, n in sorted(skipped.items()):
        words = {
            "n": n,
            "s": "" if n == 1 else "s",
            "ies": "y" if n == 1 else "ies",
            "were": "was" if n == 1 else "were",
        }
        template = _SKIP_SENTENCES.get(reason)
        if template is None:
            sentence = f"{n} line{words['s']} not kept ({reason})"
        else:
            sentence = template.format(**words)
        if reason.startswith("transcript_") and n > 1:
            sentence += f" ({n} times)"
        sentences.append(sentence + ".")
    return sentences


def _timestamp(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    try:
        moment = parse_datetime(value)
    except ValueError:
        return None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment, datetime.UTC)
    return moment


def _clean(text: str) -> str:
    """Text every database keeps: PostgreSQL refuses NUL in text, and a transcript may hold
    binary output."""
    return text.replace("\x00", "\ufffd")


def _row(session: Session | None, seq: int, entry: Entry) -> TranscriptEntry:
    return TranscriptEntry(
        session=session,
        seq=seq,
        key=_clean(entry.key),
        type=entry.type,
        parent=_clean(entry.parent or "")[:100],
        timestamp=_timestamp(entry.timestamp),
        prose=_clean(entry.prose),
        tools=[
            [_clean(t.name), _clean(t.argument), _clean(t.file_path) if t.file_path else None]
            for t in entry.tools
        ],
        errors=[_clean(error) for error in entry.errors],
        text=_clean(entry.search_text),
        is_user_prose=entry.is_user_prose,
        is_sidechain=entry.is_sidechain,
    )


def entry_from_row(row: TranscriptEntry) -> Entry:
    """The core's view of a stored entry (for the gates and the extraction request)."""
    return Entry(
        key=row.key,
        type=row.type,
        parent=row.parent or None,
        timestamp=row.timestamp.isoformat() if row.timestamp else None,
        prose=row.prose,
        tools=tuple(ToolCall(name, argument, path) for name, argument, path in row.tools),
        errors=tuple(row.errors),
        is_user_prose=row.is_user_prose,
        is_sidechain=row.is_sidechain,
    )


def _parsed(raw_entries: list) -> tuple[list[Entry], Counter[str], int]:
    """Each kept entry, shrunk and redacted by the fast rules; skipped ones counted."""
    kept, skipped, redacted = [], Counter(), 0
    for raw in raw_entries:
        try:
            parse_entry(raw)  # refuse unknown types before anything else is done with it
            clean, hits = redact_entry(shrink_entry(raw))
            kept.append(parse_entry(clean))
        except EntryError as exc:
            if exc.counted:
                skipped[exc.reason] += 1
            continue
        redacted += len(hits)
    return kept, skipped, redacted


def _title(session: Session, entries: list[Entry]) -> str:
    """The session's title: its summary, else the first prompt; redacted by both secret
    layers when it is new, as the entries are, then cut: cut first, a secret across the cut
    would not be found."""
    for entry in entries:
        if entry.type == "summary" and entry.prose:
            return _redacted_title(entry.prose)
    if session.title:
        return session.title
    for entry in entries:
        if entry.is_user_prose and not entry.is_sidechain:
            return _redacted_title(" ".join(entry.prose.split()))
    return ""


def _redacted_title(text: str) -> str:
    # A secret runs a few hundred characters at most: what lies past that beyond the cut
    # cannot reach into the title.
    return redact_with_gate(text[: MAX_TITLE * 4])[0][:MAX_TITLE]


def do_ingest_entries(
    user,
    store: Store,
    session_id: str,
    raw_entries: list,
    *,
    cwd: str = "",
    memory_dir: str = "",
    final: bool = False,
    client_skipped: dict[str, int] | None = None,
    auto_dream: bool | None = None,
    agent: str = "claude-code",
) -> IngestResult:
    """Store the new entries of one of `user`'s sessions (idempotent by entry key), redacted by
    both secret layers before they are stored: no secret either finds is ever stored in clear
    (docs/design.md §14.3). detect-secrets runs before the transaction, so the session's row
    is locked only while the entries are written."""
    kept, skipped, redacted = _parsed(raw_entries)
    gated = {}
    for entry in kept:
        if entry.key not in gated:
            row = _row(None, 0, entry)
            gated[entry.key] = (row, _gate(row))
    for reason, count in (client_skipped or {}).items():
        skipped[str(reason)[:40]] += count
    with transaction.atomic():
        session, _ = Session.objects.select_for_update().get_or_create(
            owner=user,
            session_id=session_id,
            defaults={"project": store.project, "store": store, "agent": agent},
        )
        if session.project_id == store.project_id:
            session.project = store.project  # loaded with the store: not read again after
        # Unordered: the model's ordering (`session`, `seq`) made SQLite walk every entry of the
        # session by seq instead of looking the keys up in (session, key), a cost that grew
        # with the session (3 ms of a Stop hook's upload at 5,000 entries).
        known = set(
            session.entries.filter(key__in=[e.key for e in kept])
            .order_by()
            .values_list("key", flat=True)
        )
        fresh, seen = [], set(known)
        for entry in kept:
            if entry.key not in seen:
                seen.add(entry.key)
                fresh.append(entry)
        rows = [gated[e.key][0] for e in fresh]
        for i, row in enumerate(rows):
            row.session, row.seq = session, session.entry_count + i + 1
        redacted += sum(gated[e.key][1] for e in fresh)
        TranscriptEntry.objects.bulk_create(rows, batch_size=500)
        turns = count_turns(fresh)
        now = timezone.now()
        session.entry_count += len(rows)
        session.turn_count += turns
        session.turns_pending += turns
        session.redactions += redacted
        main = [e for e in fresh if not e.is_sidechain]
        session.tokens += sum(entry_tokens(e) for e in main)
        session.tool_calls += sum(len(e.tools) for e in main)
        replies = [e for e in main if e.type == "assistant"]
        if replies:
            session.at_rest = not replies[-1].tools
        session.title = _title(session, fresh)
        session.last_entry_at = now
        session.store = store
        entry_cwd = next((e.cwd for e in fresh if e.cwd), "")
        session.cwd = (cwd or session.cwd or _clean(entry_cwd))[:4096]
        session.memory_dir = memory_dir[:4096] or session.memory_dir
        interactive = [e.interactive for e in fresh if e.interactive is not None]
        if interactive:
            session.interactive = interactive[-1]
        if final:
            session.ended_at = now
        if auto_dream is not None:
            session.auto_dream = auto_dream
        counts = Counter(session.skipped)
        counts.update(skipped)
        session.skipped = dict(counts)
        session.save()
    return IngestResult(
        session,
        received=len(raw_entries),
        stored=len(rows),
        duplicates=len(kept) - len(fresh),
        redacted=redacted,
        turns=turns,
        skipped=skipped,
    )


def check_with_gate(sessions) -> int:
    """Run the push gate's second layer (detect-secrets) over the entries of `sessions` not yet
    checked (stored before ingest ran it), redacting what it finds, and mark them checked: only
    checked entries are read (by extraction, search and the session page). Returns how many
    secrets were redacted."""
    found: Counter[int] = Counter()
    clean: list[int] = []
    pending = TranscriptEntry.objects.filter(session__in=sessions, gate_checked=False)
    for row in pending.only("pk", "session", "prose", "tools", "errors", "text").iterator():
        hits = _gate(row)
        if not hits:
            clean.append(row.pk)
            continue
        found[row.session_id] += hits
        row.save(update_fields=["text", "prose", "tools", "errors", "gate_checked"])
    for start in range(0, len(clean), 500):
        TranscriptEntry.objects.filter(pk__in=clean[start : start + 500]).update(gate_checked=True)
    for session_pk, count in found.items():
        Session.objects.filter(pk=session_pk).update(redactions=F("redactions") + count)
    return sum(found.values())


def _gate(row: TranscriptEntry) -> int:
    """Redact what detect-secrets finds in `row` (its text, and then its parts) and mark it
    checked; how many secrets it found."""
    text, hits = redact_with_gate(row.text)
    row.gate_checked = True
    if hits:
        row.text = text
        row.prose = redact_with_gate(row.prose)[0]
        row.tools = [[name, redact_with_gate(arg)[0], path] for name, arg, path in row.tools]
        row.errors = [redact_with_gate(error)[0] for error in row.errors]
    return len(hits)


def do_forget_session(session: Session) -> int:
    """Delete a session and its transcript ("forget this session"); proposals made from it stay
    (they hold no transcript text). Returns how many entries went."""
    count = session.entry_count
    session.delete()
    return count


def prune_sessions(days: int, now: datetime.datetime | None = None) -> int:
    """Delete sessions with no entry for `days` days (0 keeps everything); how many went."""
    if days <= 0:
        return 0
    now = now or timezone.now()
    _, by_model = Session.objects.filter(last_entry_at__lt=now - timedelta(days=days)).delete()
    return by_model.get(Session._meta.label, 0)
