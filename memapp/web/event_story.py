"""Events told as sentences a person reads (docs/design.md §12, §22): a kind's name in words,
its fields as a sentence, the files a team sync moved to the Trash or kept back named, with
undo where the Trash still holds them, and routine background events (discovery every minute,
pulls that brought nothing) folded into one line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memapp.memdir.secret_rules import redact_text
from memapp.stores.models import Event, TrashItem, Via
from memapp.web.sync_story import first_line, joined, plural
from memapp.web.sync_story import sentence as sync_sentence
from teamsync.models import BlockedFile

KIND_LABELS = {
    "sync_pull": "Team sync pull",
    "sync_push": "Team sync push",
    "push_suppressed": "Pushing stopped",
    "secret_skipped": "Kept back: a secret",
    "entries_capped": "Kept back: too many memories",
    "team_sync_changed": "Team sync changed files",
    "index_loaded": "Index loaded",
    "recall": "Recall",
    "flag_changed": "Setting changed",
    "snapshot_decision": "Snapshot decision",
    "memory_written": "Memory written",
    "memory_forgotten": "Memory forgotten",
    "conflict": "Conflict",
    "stores_discovered": "Discovery",
    "extraction_run": "Extraction",
    "proposal_decided": "Proposal decided",
    "consolidation_run": "Consolidation",
    "member_added": "Member added",
    "member_removed": "Member removed",
}

VIA = dict(Via.choices)
KEPT_BACK = {
    "secret_skipped": BlockedFile.Reason.SECRET,
    "entries_capped": BlockedFile.Reason.CAPPED,
}

OUTCOMES = {
    "proposed": "proposed {n}",
    "nothing": "found nothing worth keeping",
    "skipped": "was skipped",
    "failed": "failed",
}


def kind_label(kind: str) -> str:
    return KIND_LABELS.get(kind, kind.replace("_", " ").capitalize())


def value_words(value: object) -> str:
    """A field's value as a person reads it: yes/no, lists joined, nothing for None."""
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(value_words(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {value_words(v)}" for k, v in value.items())
    return str(value)


def _memories(paths: Sequence[str], names: dict) -> str:
    return joined([names.get(p) or p for p in paths])


def _changes(n: int) -> str:
    return plural(n, "change")


def _team_sync_changed(f: dict, where: str) -> tuple[str, str]:
    names = f.get("names") or {}
    written, trashed = f.get("written") or [], f.get("trashed") or []
    authors = f.get("authors") or []
    parts = []
    if trashed:
        moved = plural(len(trashed), "memory", "memories")
        parts.append(f"moved {moved} to the Trash{where}: {_memories(trashed, names)}")
    if written:
        by = f" from {joined(authors)}" if authors else ""
        parts.append(f"brought {_changes(len(written))}{by}: {_memories(written, names)}")
    return "Team sync " + "; ".join(parts), "warn" if trashed else "ok"


def _kept_back(event: Event, where: str, still: Sequence[str]) -> tuple[str, str]:
    """`still`: the files the store keeps back for that reason now (the event holds counts
    only, never a file's name, docs/design.md §10a), so a fixed file is no longer named."""
    f = event.fields
    if event.kind == "secret_skipped":
        n = f.get("file_count") or 0
        why = f"what looks like a secret ({', '.join(f.get('rule_ids') or [])})"
    else:
        n = f.get("dropped_count") or 0
        why = f"the team keeps at most {f.get('max_entries')} memories"
    named = f". Still kept back: {joined(list(still))}" if still else ""
    return f"Team sync kept {plural(n, 'file')} back{where}: {why}{named}", "warn"


def _run(f: dict, what: str) -> tuple[str, str]:
    outcome = f.get("outcome") or ""
    if outcome == "failed":
        return f"{what} failed: {first_line(f.get('error'))}", "bad"
    words = OUTCOMES.get(outcome, outcome).format(n=_changes(f.get("proposed") or 0))
    tone = "ok" if outcome == "proposed" else "muted"
    return f"{what} {words}", tone


def sentence(event: Event, kept: dict | None = None) -> tuple[str, str]:
    """What one event says, and its tone (ok, warn, bad, muted or none); `kept` maps (store
    id, reason) to the files kept back now."""
    f = event.fields
    project = event.project or (event.store.project if event.store_id else None)
    where = f" in {project}" if project else ""
    kind = event.kind
    if kind == "team_sync_changed":
        return _team_sync_changed(f, where)
    if kind in KEPT_BACK:
        return _kept_back(event, where, (kept or {}).get((event.store_id, KEPT_BACK[kind]), []))
    if kind == "conflict":
        return sync_sentence(event)
    if kind in ("sync_pull", "sync_push", "push_suppressed"):
        text, tone = sync_sentence(event)
        text = text.replace(": nothing new", ", nothing new")
        return f"Team sync {text[0].lower()}{text[1:]}", tone
    if kind == "stores_discovered":
        found, removed = f.get("found") or 0, f.get("removed") or 0
        gone = f", {removed} gone" if removed else ""
        return f"Discovery found {plural(found, 'memory directory', 'memory directories')}{gone}", (
            "warn" if removed else "muted"
        )
    if kind == "index_loaded":
        cut = f.get("truncated_by_lines") or f.get("truncated_by_bytes")
        lines = plural(f.get("line_count") or 0, "line")
        text = f"An agent loaded the index{where}: {lines}"
        return (f"{text}, cut short (over the cap)", "warn") if cut else (text, "muted")
    if kind == "recall":
        if f.get("error"):
            return f"Recall fell back to offline search: {first_line(f.get('error'))}", "warn"
        picked, of = f.get("selected") or 0, f.get("candidates") or 0
        return f"Recall picked {picked} of {plural(of, 'memory', 'memories')}{where}", "muted"
    if kind == "flag_changed":
        was = value_words(f.get("old"))
        now = value_words(f.get("new"))
        scope = f.get("scope") or "everywhere"
        note = f" ({f['note']})" if f.get("note") else ""
        return f"Setting {f.get('name')} for {scope} set to {now}, was {was or 'unset'}{note}", ""
    if kind in ("memory_written", "memory_forgotten"):
        via = VIA.get(f.get("via"), f.get("via") or "")
        how = f" through {via}" if via else ""
        if kind == "memory_forgotten":
            return f"Forgot {f.get('path')}{where}{how}: it waits in the Trash", ""
        did = "Wrote a new memory" if f.get("created") else "Changed"
        return f"{did} {f.get('path')}{where}{how}", ""
    if kind == "snapshot_decision":
        agent, scope = f.get("agent_type"), f.get("scope")
        return f"Snapshot of agent {agent} ({scope} scope): {f.get('decision')}", ""
    if kind == "extraction_run":
        return _run(f, "Extraction")
    if kind == "consolidation_run":
        return _run(f, "Consolidation")
    if kind == "proposal_decided":
        applied = f.get("applied") or 0
        decision = {"auto": "applied automatically"}.get(f.get("decision"), f.get("decision"))
        kind_name = f.get("proposal_kind") or "memory"
        article = "An" if kind_name[:1] in "aeiou" else "A"
        written = f"{applied} change{'' if applied == 1 else 's'} written"
        return f"{article} {kind_name} proposal was {decision}: {written}", ""
    if kind in ("member_added", "member_removed"):
        joined = "joined" if kind == "member_added" else "left"
        return f"{f.get('member')} {joined} the project{where}", ""
    return kind_label(kind), ""


def _routine(event: Event, tone: str) -> bool:
    """Background events that happen every minute and say nothing new."""
    if event.kind == "stores_discovered":
        return not event.fields.get("removed")
    return event.kind == "sync_pull" and tone == "muted"


@dataclass
class Undo:
    path: str
    name: str
    item: TrashItem


@dataclass
class Line:
    event: Event
    label: str
    text: str
    tone: str = ""
    times: int = 1  # how many events this line stands for (a folded run)
    since: datetime | None = None
    fields: list[tuple[str, str]] = field(default_factory=list)
    undo: list[Undo] = field(default_factory=list)


def _fields(event: Event, ordered: Iterable[tuple[str, object]]) -> list[tuple[str, str]]:
    shown = []
    for key, value in ordered:
        words = value_words(value)
        if words:
            shown.append((key.replace("_", " "), words))
    return shown


def _undo(lines: list[Line]) -> None:
    """For each line of a team sync that moved memories to the Trash, what the Trash still
    holds of them: the newest item of that store and path deleted by team sync by then."""
    wanted = [ln for ln in lines if ln.event.kind == "team_sync_changed" and ln.event.store_id]
    if not wanted:
        return
    items = TrashItem.objects.filter(
        store_id__in={ln.event.store_id for ln in wanted},
        path__in={p for ln in wanted for p in ln.event.fields.get("trashed") or []},
        via=Via.TEAM_SYNC,
    ).order_by("deleted_at", "id")
    for line in wanted:
        names = line.event.fields.get("names") or {}
        for path in line.event.fields.get("trashed") or []:
            found = [
                i
                for i in items
                if i.store_id == line.event.store_id
                and i.path == path
                and i.deleted_at <= line.event.created_at
            ]
            if found:
                line.undo.append(Undo(path, names.get(path) or path, found[-1]))


def _kept(events: list[Event]) -> dict[tuple[int, str], list[str]]:
    stores = {e.store_id for e in events if e.kind in KEPT_BACK and e.store_id}
    kept: dict[tuple[int, str], list[str]] = {}
    for store_id, reason, key in (
        BlockedFile.objects.filter(store_id__in=stores)
        .order_by("key")
        .values_list("store_id", "reason", "key")
    ):
        # A token in a file's name is the reason it is kept back: shown redacted, as on the
        # Team sync page.
        kept.setdefault((store_id, reason), []).append(redact_text(key)[0])
    return kept


def story(events: Iterable[Event], ordered_fields) -> list[Line]:
    """Events newest first as lines; a run of the same routine event becomes one line."""
    events = list(events)
    kept = _kept(events)
    lines: list[Line] = []
    for event in events:
        text, tone = sentence(event, kept)
        last = lines[-1] if lines else None
        if (
            last is not None
            and _routine(event, tone)
            and _routine(last.event, last.tone)
            and (last.event.kind, last.event.project_id, last.text)
            == (event.kind, event.project_id, text)
        ):
            last.times += 1
            last.since = event.created_at
            continue
        fields = _fields(event, ordered_fields(event))
        lines.append(Line(event, kind_label(event.kind), text, tone, fields=fields))
    _undo(lines)
    return lines
