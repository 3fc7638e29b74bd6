"""Daily logs as part of a private store (docs/design.md §14.8): appending an entry, merging a
copy of a log that `memhub-agent sync` brings, reading them as a timeline, and the entries a
distillation has not read yet.

A log lives in the store's own directory (`logs/YYYY/MM/YYYY-MM-DD.md`) beside its memories,
but is no memory: the mirror, the index and recall leave it out, and it is only ever appended
to. Two copies of a log (the agent's and the server's) are merged by appending to each the
lines it lacks, so nothing either side wrote is lost.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from django.utils import timezone

from memapp.lifecycle.models import ConsolidationState
from memapp.memdir.daily_logs import (
    LogEntry,
    LogLineRejected,
    append_to_log,
    check_log_line,
    count_lines,
    daily_log_path,
    format_log_line,
    list_logs,
    log_day,
    log_path,
    missing_lines,
    parse_log,
    read_log,
)
from memapp.memdir.keys import PathTraversalError
from memapp.memdir.secret_gate import scan_for_push
from memapp.memdir.secret_rules import SecretHit
from memapp.memdir.store_files import FileRejected, checksum
from memapp.stores.locks import store_lock
from memapp.stores.models import Store

__all__ = [
    "LogAppended",
    "LogDay",
    "do_append_daily_log",
    "do_merge_daily_log",
    "has_logs",
    "log_checksum",
    "log_summary",
    "new_log_entries",
    "read_store_log",
    "store_logs",
]


def _gate(line: str) -> list[SecretHit]:
    """Both layers of the secret filter (docs/design.md §10a): the logs are distilled into
    proposals that may reach team memory, so they take what the push gate would refuse."""
    return scan_for_push({"log.md": line}).get("log.md", [])


def has_logs(store: Store) -> bool:
    """Daily logs belong to private stores: daily-log mode writes to the agent's own memory."""
    return store.kind == Store.Kind.PRIVATE


def _refuse(exc: LogLineRejected, details: dict | None = None) -> FileRejected:
    return FileRejected(exc.code, str(exc), details)


def _log_store(store: Store) -> Path:
    if not has_logs(store):
        raise FileRejected("invalid", "only a private store keeps daily logs")
    return Path(store.path)


def _checked_key(key: str) -> str:
    if log_day(key) is None:
        raise FileRejected(
            "invalid_key", f"{key[:200]!r} is not a daily log (logs/YYYY/MM/YYYY-MM-DD.md)"
        )
    return key


def log_checksum(data: bytes) -> str:
    return checksum(data)


@dataclass(frozen=True)
class LogAppended:
    key: str
    line: str
    checksum: str
    appended: int


def do_append_daily_log(
    store: Store,
    user,
    *,
    text: str,
    day: datetime.date,
    at: str | None = None,
    memory_type: str | None = None,
) -> LogAppended:
    """Append one entry (`- HH:MM [type] text`) to the log of `day`, the agent's local date,
    which may differ from the server's by a day either way. Raises FileRejected (nothing
    written) for a date that is not today anywhere, or a line that is empty, spans lines, is
    over 4 KB or holds a secret."""
    root = _log_store(store)
    today = timezone.now().date()
    if abs((day - today).days) > 1:
        raise FileRejected(
            "invalid", f"{day.isoformat()} is not today anywhere: append to today's log only"
        )
    try:
        line = format_log_line(text, at, memory_type)
        check_log_line(line, _gate)
    except LogLineRejected as exc:
        raise _refuse(exc) from None
    key = daily_log_path(day)
    with store_lock(store):
        try:
            data = append_to_log(root, key, [line])
        except PathTraversalError as exc:
            raise FileRejected("invalid_key", str(exc), {"key": key, "rule": exc.rule}) from None
    return LogAppended(key, line, log_checksum(data), 1)


def do_merge_daily_log(store: Store, user, key: str, lines: list[str]) -> LogAppended:
    """Append to the log `key` each of `lines` it lacks (counted as a multiset, so a line
    written twice on purpose stays twice): a copy of the log coming from an agent. Every line
    is checked first and one bad line refuses them all, naming it; nothing is written then."""
    root = _log_store(store)
    _checked_key(key)
    for number, line in enumerate(lines, start=1):
        try:
            check_log_line(line, _gate)
        except LogLineRejected as exc:
            raise _refuse(exc, {"key": key, "line": number}) from None
    with store_lock(store):
        try:
            current = read_log(root, key)
            missing = missing_lines(current, "\n".join(lines))
            data = append_to_log(root, key, missing) if missing else _bytes(root, key)
        except PathTraversalError as exc:
            raise FileRejected("invalid_key", str(exc), {"key": key, "rule": exc.rule}) from None
    return LogAppended(key, "", log_checksum(data), len(missing))


def _bytes(root: Path, key: str) -> bytes:
    try:
        return log_path(root, key).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return b""


def read_store_log(store: Store, key: str) -> bytes | None:
    """A log's bytes; None when there is no such log."""
    root = _log_store(store)
    _checked_key(key)
    try:
        path = log_path(root, key)
    except PathTraversalError as exc:
        raise FileRejected("invalid_key", str(exc), {"key": key, "rule": exc.rule}) from None
    return path.read_bytes() if path.is_file() else None


@dataclass(frozen=True)
class LogDay:
    """One day's log of a store, for the API's listing and the timeline."""

    key: str
    day: datetime.date
    checksum: str
    entries: list[LogEntry]
    distilled_through: int  # the last line a distillation has read (0: none)

    @property
    def pending(self) -> int:
        return sum(entry.number > self.distilled_through for entry in self.entries)


def store_logs(store: Store, month: str | None = None) -> list[LogDay]:
    """The store's daily logs, newest day first (those of `month`, `YYYY-MM`, when given)."""
    if not has_logs(store):
        return []
    root = Path(store.path)
    cursor = _cursor(store)
    days = []
    for key, day in reversed(list_logs(root)):
        if month is not None and f"{day:%Y-%m}" != month:
            continue
        try:
            data = (root / key).read_bytes()
        except OSError:
            continue
        text = data.decode("utf-8", "replace")
        days.append(LogDay(key, day, log_checksum(data), parse_log(text, key), cursor.get(key, 0)))
    return days


def log_summary(store: Store) -> tuple[int, int]:
    """How many daily logs the store has and how many of their entries no distillation has
    read: for a status shown on every poll, so only the logs with unread lines are parsed."""
    if not has_logs(store):
        return 0, 0
    days = len(list_logs(store.path))
    return days, len(new_log_entries(store, _cursor(store))[0])


def _cursor(store: Store) -> dict[str, int]:
    state = ConsolidationState.objects.filter(store=store).first()
    return dict(state.log_cursor) if state is not None else {}


def new_log_entries(store: Store, cursor: dict[str, int]) -> tuple[list[LogEntry], dict[str, int]]:
    """The entries after `cursor` (log key → last line read) in every log of the store,
    oldest first, and the cursor once they are read. A log shorter than its cursor was cut
    (logs only grow): it is read again from its start."""
    if not has_logs(store):
        return [], dict(cursor)
    root = Path(store.path)
    entries: list[LogEntry] = []
    moved = dict(cursor)
    for key, _day in list_logs(root):
        text = read_log(root, key)
        last = count_lines(text)
        start = cursor.get(key, 0)
        if last < start:
            start = 0
        if last == start:
            continue
        entries += [entry for entry in parse_log(text, key) if entry.number > start]
        moved[key] = last
    return entries, moved
