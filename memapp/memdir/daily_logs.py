"""Daily logs (docs/design.md §14.8): `logs/YYYY/MM/YYYY-MM-DD.md` in a private memory dir,
dated by the agent's local calendar, one bullet per entry, append-only.

In daily-log mode an agent appends what is worth remembering to today's log instead of writing
topic files; a distillation later turns the days logged since its previous run into proposed
memories. This module holds the rules without Django: which keys are logs, what a line may hold
(one line, at most 4 KB, no secret), how entries read, how a line is appended atomically, and
which lines one copy of a log lacks from another (logs are merged, never overwritten).
"""

from __future__ import annotations

import datetime
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memapp.memdir.frontmatter import MEMORY_TYPES
from memapp.memdir.keys import validate_key
from memapp.memdir.prompt import daily_log_path
from memapp.memdir.secret_rules import SecretHit, scan_text

__all__ = [
    "LOGS_DIR",
    "MAX_LOG_LINE_BYTES",
    "LogEntry",
    "LogLineRejected",
    "append_to_log",
    "check_log_line",
    "count_lines",
    "daily_log_path",
    "format_log_line",
    "list_logs",
    "log_day",
    "log_path",
    "missing_lines",
    "parse_log",
    "read_log",
]

LOGS_DIR = "logs"
MAX_LOG_LINE_BYTES = 4096
_KEY = re.compile(r"logs/(\d{4})/(\d{2})/(\d{4})-(\d{2})-(\d{2})\.md")
_ENTRY = re.compile(
    r"[-*+][ \t]+(?:(?P<time>\d{1,2}:\d{2})(?::\d{2})?[ \t]+)?"
    r"(?:\[(?P<type>[A-Za-z]+)\][ \t]*)?(?P<text>.*)"
)
_TIME = re.compile(r"(?:[01]?\d|2[0-3]):[0-5]\d")
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def log_day(key: str) -> datetime.date | None:
    """The day a log key is for; None for anything that is not exactly a log's key (the
    folders must match the date, and the date must exist)."""
    match = _KEY.fullmatch(key)
    if match is None:
        return None
    year, month, *date = match.groups()
    if (year, month) != (date[0], date[1]):
        return None
    try:
        return datetime.date(int(date[0]), int(date[1]), int(date[2]))
    except ValueError:
        return None


class LogLineRejected(ValueError):
    """A log line memhub will not write; `code` is stable, the message says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def format_log_line(text: str, at: str | None = None, memory_type: str | None = None) -> str:
    """One entry as the daily-log prompt asks agents to write it: `- 14:05 [feedback] text`
    (time and type are left out when not given). Surrounding whitespace is dropped."""
    parts = ["-"]
    if at:
        if not _TIME.fullmatch(at):
            raise LogLineRejected("invalid", f"the time must be HH:MM, not {at[:20]!r}")
        parts.append(at.zfill(5))
    if memory_type:
        if memory_type not in MEMORY_TYPES:
            raise LogLineRejected("invalid", f"the type must be one of {', '.join(MEMORY_TYPES)}")
        parts.append(f"[{memory_type}]")
    parts.append(text.strip())
    return " ".join(parts)


def check_log_line(
    line: str, secret_check: Callable[[str], Sequence[SecretHit]] = scan_text
) -> None:
    """Refuse, with the reason, a line that is empty, spans lines, holds NUL, is over 4 KB or
    holds what `secret_check` takes for a secret (named by its label, never its value): the
    fast rules on the agent's machine, both layers of the gate on the server."""
    if not line.strip(" \t-*+"):
        raise LogLineRejected("invalid", "the log line is empty")
    if any(mark in _LINE_BREAKS for mark in line):
        raise LogLineRejected("invalid", "a log entry is one line: one bullet per entry")
    if "\0" in line:
        raise LogLineRejected("binary_content", "the log line holds NUL bytes")
    size = len(line.encode("utf-8", "surrogatepass"))
    if size > MAX_LOG_LINE_BYTES:
        raise LogLineRejected(
            "entry_too_large",
            f"the log line is {size:,} bytes; the limit is {MAX_LOG_LINE_BYTES:,} (4 KB): "
            "keep an entry short and put detail in a topic file",
        )
    hits = secret_check(line)
    if hits:
        labels = ", ".join(sorted({hit.label for hit in hits}))
        raise LogLineRejected(
            "secret_detected", f"refused: the log line holds what looks like a secret ({labels})"
        )


@dataclass(frozen=True)
class LogEntry:
    """One bullet of a daily log. `number` is its line number in the file (from 1), so the
    entries after line N are the ones appended since a reader stopped at N."""

    key: str
    day: datetime.date
    number: int
    time: str | None
    type: str | None
    text: str


def parse_log(text: str, key: str) -> list[LogEntry]:
    """The entries of a log: its bullets, with the time and `[type]` tag they start with when
    they do (an unknown tag stays in the text). Other lines (headings, prose) are not entries."""
    day = log_day(key)
    if day is None:
        raise ValueError(f"not a daily log: {key!r}")
    entries = []
    for number, line in enumerate(text.split("\n"), start=1):
        match = _ENTRY.fullmatch(line.strip())
        if match is None or not match["text"].strip():
            continue
        memory_type = (match["type"] or "").lower()
        body = match["text"].strip()
        if match["type"] and memory_type not in MEMORY_TYPES:
            memory_type, body = "", f"[{match['type']}] {body}"
        entries.append(LogEntry(key, day, number, match["time"], memory_type or None, body))
    return entries


def log_path(root: str | os.PathLike[str], key: str) -> Path:
    """The path of a log, through the key rules of docs/design.md §4 (PathTraversalError when
    a symlink would take it outside the memory dir); ValueError for a key that is no log's."""
    if log_day(key) is None:
        raise ValueError(f"not a daily log: {key!r}")
    return validate_key(root, key)


def read_log(root: str | os.PathLike[str], key: str) -> str:
    """A log's text ("" when it does not exist; invalid UTF-8 replaced by U+FFFD)."""
    try:
        return log_path(root, key).read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def _subdirs(path: Path, pattern: str) -> list[str]:
    try:
        entries = list(os.scandir(path))
    except OSError:
        return []
    return sorted(
        e.name for e in entries if re.fullmatch(pattern, e.name) and e.is_dir(follow_symlinks=False)
    )


def list_logs(root: str | os.PathLike[str]) -> list[tuple[str, datetime.date]]:
    """Every daily log of the memory dir at `root`, oldest first, as (key, day). Symlinks,
    misnamed files and folders are left out; a missing `logs/` has none."""
    base = Path(root) / LOGS_DIR
    found = []
    for year in _subdirs(base, r"\d{4}"):
        for month in _subdirs(base / year, r"\d{2}"):
            folder = base / year / month
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                key = f"{LOGS_DIR}/{year}/{month}/{entry.name}"
                day = log_day(key)
                if day is None:
                    continue
                try:
                    regular = stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode)
                except OSError:
                    continue
                if regular:
                    found.append((key, day))
    return sorted(found, key=lambda item: item[1])


def append_to_log(root: str | os.PathLike[str], key: str, lines: list[str]) -> bytes:
    """Append `lines` to the log `key` of the memory dir at `root`, creating it (and its
    folders) when missing, and return the new content. The bytes are appended (`O_APPEND`,
    then fsync) rather than the file replaced: the agent appends to the same file, and a line
    it writes meanwhile must not be lost. The caller has checked each line."""
    path = log_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    added = "".join(f"{line}\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            added = b"\n" + added  # the last line so far had no newline yet
        os.write(fd, added)
        os.fsync(fd)
    finally:
        os.close(fd)
    return path.read_bytes()


def count_lines(text: str | bytes) -> int:
    """Lines of a log as entries number them (a last line without a newline counts)."""
    newline = "\n" if isinstance(text, str) else b"\n"
    return text.count(newline) + (1 if text and not text.endswith(newline) else 0)  # type: ignore[arg-type]


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.split("\n") if line.strip()]


def missing_lines(have: str, other: str) -> list[str]:
    """The non-blank lines of `other` that `have` lacks, counted as a multiset (a line written
    twice on purpose is kept twice), in `other`'s order, trailing blanks dropped: what must be
    appended to `have` for it to hold everything `other` holds."""
    counts = Counter(_lines(have))
    missing = []
    for line in _lines(other):
        if counts[line]:
            counts[line] -= 1
        else:
            missing.append(line)
    return missing
