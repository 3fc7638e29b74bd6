"""How old a memory is, and how recalled memories are shown to an agent.

A memory is a point-in-time observation. Recalled memories carry their age in the header, and
anything older than a day is preceded by a note telling the agent to verify before trusting it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

from memapp.memdir.records import Record

__all__ = [
    "MAX_SURFACED_BYTES",
    "MAX_SURFACED_LINES",
    "MS_PER_DAY",
    "RecalledMemory",
    "memory_age",
    "memory_age_days",
    "memory_header",
    "render_recalled",
    "staleness_note",
    "truncate_for_surfacing",
]

MS_PER_DAY = 86_400_000
MAX_SURFACED_LINES = 200
MAX_SURFACED_BYTES = 4096


def _now_ms() -> float:
    return time.time() * 1000


def memory_age_days(mtime_ms: float, now_ms: float | None = None) -> int:
    """Whole days since `mtime_ms`, rounded down; 0 for a modification time in the future."""
    if now_ms is None:
        now_ms = _now_ms()
    return max(0, math.floor((now_ms - mtime_ms) / MS_PER_DAY))


def memory_age(mtime_ms: float, now_ms: float | None = None) -> str:
    """`today`, `yesterday` or `N days ago`."""
    days = memory_age_days(mtime_ms, now_ms)
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    return f"{days} days ago"


def staleness_note(mtime_ms: float, now_ms: float | None = None) -> str:
    """A caution for memories older than a day; "" for one saved today or yesterday."""
    days = memory_age_days(mtime_ms, now_ms)
    if days <= 1:
        return ""
    return (
        f"This memory is {days} days old. Memories are point-in-time observations, not live "
        "state: claims about code behavior or file:line citations may be outdated. Verify "
        "against the current code before asserting them as fact."
    )


def memory_header(path: str, mtime_ms: float, now_ms: float | None = None) -> str:
    """The line introducing a recalled memory.

    `Memory (saved today): <path>:`, `Memory (saved yesterday): <path>:`, or for anything older
    the staleness note, a blank line, then `Memory: <path>:`.
    """
    days = memory_age_days(mtime_ms, now_ms)
    if days <= 1:
        return f"Memory (saved {memory_age(mtime_ms, now_ms)}): {path}:"
    return f"{staleness_note(mtime_ms, now_ms)}\n\nMemory: {path}:"


class RecalledMemory(Record):  # not a dataclass: the prompt hook loads this
    """A memory chosen for an agent: its path as the agent knows it, mtime and content."""

    path: str
    mtime_ms: int
    content: str


def render_recalled(
    memories: Iterable[RecalledMemory], now_ms: float | None = None, *, wrap: bool = True
) -> str:
    """The block an agent sees for recalled memories; "" when there are none.

    Each memory is its header, a blank line and its content (trailing newlines dropped);
    memories are separated by a blank line, and the whole set is wrapped (unless `wrap` is
    false, for a client that labels the text itself) in `<system-reminder>` tags on their own
    lines::

        <system-reminder>
        Memory (saved today): /m/a.md:

        Body of a.

        Memory (saved yesterday): /m/b.md:

        Body of b.
        </system-reminder>

    All ages are measured against the same `now_ms` (the current time when None).
    """
    memories = list(memories)
    if not memories:
        return ""
    if now_ms is None:
        now_ms = _now_ms()
    blocks = [
        memory_header(m.path, m.mtime_ms, now_ms) + "\n\n" + m.content.rstrip("\r\n")
        for m in memories
    ]
    text = "\n\n".join(blocks)
    return f"<system-reminder>\n{text}\n</system-reminder>" if wrap else text


def _line_count(text: str) -> int:
    # A final newline ends the last line; it does not start another one.
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def truncate_for_surfacing(
    content: str,
    path: str,
    max_lines: int = MAX_SURFACED_LINES,
    max_bytes: int = MAX_SURFACED_BYTES,
) -> tuple[str, bool]:
    """Cut a recalled memory to the per-memory surfacing budget; returns (text, was_truncated).

    Content within both caps comes back unchanged. Otherwise it is cut like the index: the first
    `max_lines` lines, then at the last newline within `max_bytes` UTF-8 bytes (a hard cut on a
    character boundary when there is none). The caps apply to the content; the note appended
    after a blank line is extra::

        > This memory is 250 lines (limit: 200), so only part of it is shown. Read the full file
        at /m/a.md before relying on it.

    (one line in the result; the figures are worded as in the index warning).
    """
    # Here, not at the top: the index module loads the scanner and YAML, which a hook that
    # only wants an age or a header must not pay for at start-up.
    from memapp.memdir.index import cut_to_bytes, over_caps_reason

    line_count = _line_count(content)
    byte_count = len(content.encode("utf-8", "surrogatepass"))
    lines_over = line_count > max_lines
    bytes_over = byte_count > max_bytes
    if not (lines_over or bytes_over):
        return content, False
    truncated = "\n".join(content.split("\n")[:max_lines]) if lines_over else content
    truncated = cut_to_bytes(truncated, max_bytes)
    reason = over_caps_reason(line_count, byte_count, max_lines, max_bytes, lines_over, bytes_over)
    note = (
        f"> This memory is {reason}, so only part of it is shown. "
        f"Read the full file at {path} before relying on it."
    )
    return f"{truncated.rstrip()}\n\n{note}", True
