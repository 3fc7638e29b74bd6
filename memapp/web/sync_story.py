"""Team sync's history told in sentences ("Pulled 3 changes from bob"), a run of pulls that
brought nothing folded into one line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memapp.stores.models import Event

REASONS = {
    "edit": "both sides edited it",
    "edit_delete": "edited on one side, deleted on the other",
    "resurrect": "uploaded again after it was deleted",
}


@dataclass
class Line:
    when: datetime
    text: str
    tone: str = ""  # ok, warn, bad or muted
    since: datetime | None = None  # a folded run: from `since` to `when`
    idle: int = 0  # how many pulls that brought nothing this line stands for


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def joined(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def first_line(error: str | None) -> str:
    first = (error or "unknown error").strip().splitlines()[0] if error else "unknown error"
    return first[:160]


def sentence(event: Event) -> tuple[str, str]:
    """What one event says, and its tone."""
    f = event.fields
    where = f" in {event.store.project}" if event.store_id and event.store.project else ""
    if event.kind == "sync_pull":
        if not f.get("success"):
            return f"Could not pull: {first_line(f.get('error'))}", "bad"
        n = f.get("files_written") or 0
        if not n:
            return "Pulled: nothing new", "muted"
        authors = f.get("authors") or []
        by = f" from {joined(authors)}" if authors else ""
        return f"Pulled {plural(n, 'change')}{by}", "ok"
    if event.kind == "sync_push":
        if not f.get("success"):
            return f"Could not push: {first_line(f.get('error'))}", "bad"
        n = f.get("files_uploaded") or 0
        if not n:
            return "Pushed: no memory changed", "muted"
        retries = f.get("conflict_retries") or 0
        again = f", after {plural(retries, 'retry', 'retries')} (someone pushed first)"
        return f"Pushed {plural(n, 'change')}{again if retries else ''}", "ok"
    if event.kind == "push_suppressed":
        return f"Stopped pushing until the remote accepts: {first_line(f.get('reason'))}", "bad"
    if event.kind == "secret_skipped":
        rules = ", ".join(f.get("rule_ids") or [])
        n = f.get("file_count") or 0
        return f"Kept {plural(n, 'file')} back{where}: what looks like a secret ({rules})", "warn"
    if event.kind == "entries_capped":
        n = f.get("dropped_count") or 0
        cap = f.get("max_entries")
        return f"Kept {plural(n, 'new file')} back{where}: the cap is {cap} memories", "warn"
    if event.kind == "conflict":
        path = f.get("path", "")
        if f.get("resolution"):
            who = event.user.get_username() if event.user_id else "someone"
            return f"{who} settled the conflict in {path}{where}: kept {f['resolution']}", "ok"
        return f"Conflict in {path}{where}: {REASONS.get(f.get('reason'), f.get('reason'))}", "warn"
    return event.kind.replace("_", " "), ""


def sync_story(events: Iterable[Event]) -> list[Line]:
    """Events newest first, as lines; consecutive pulls with nothing new become one line."""
    lines: list[Line] = []
    for event in events:
        text, tone = sentence(event)
        idle = event.kind == "sync_pull" and tone == "muted"
        last = lines[-1] if lines else None
        if idle and last is not None and last.idle:
            last.idle += 1
            last.since = event.created_at
            last.text = f"{last.idle} pulls, nothing new"
            continue
        lines.append(Line(event.created_at, text, tone, idle=int(idle)))
    return lines
