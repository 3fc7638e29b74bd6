"""Planning a MEMORY.md (docs/design.md §5, §14.7): the index a consolidation, a distillation or
an applied proposal writes, repaired, completed and pruned to its caps, and the checks and
risks a person is shown before it is written.

`plan_index` is what every proposed index goes through, so it never names a file that will not
exist and, unless a person edits it so, fits its caps; `fit_index` does the same for an index a
person or an applied proposal changed; `index_checks` says what is wrong with one, in words;
`store_risks` names what about a whole proposal must be ticked explicitly.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from memapp.memdir.absolute_dates import make_dates_absolute
from memapp.memdir.index import (
    MAX_ENTRY_CHARS,
    MAX_INDEX_BYTES,
    MAX_INDEX_LINES,
    format_index_entry,
    index_size,
    is_linkable,
    parse_index_entries,
)
from memapp.memdir.lint import relative_dates

__all__ = [
    "HOOK_CHARS",
    "RISKY_DELETE_SHARE",
    "IndexPlan",
    "Risk",
    "TopicFile",
    "fit_index",
    "index_checks",
    "plan_index",
    "shorten",
    "store_risks",
]

HOOK_CHARS = 150  # an index line the pass writes or shortens stays under this (the client's ~150)
RISKY_DELETE_SHARE = 0.25  # deleting more than this share of a store needs an explicit tick


@dataclass(frozen=True)
class TopicFile:
    """A topic file as the index is planned from it: its title, its description (the index
    hook) and the day it was written (what its relative dates count from)."""

    key: str
    title: str
    description: str
    mtime_ms: int
    day: datetime.date


@dataclass
class IndexPlan:
    """A planned MEMORY.md and what planning it did, for the reviewer."""

    text: str
    dangling: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    dated: list[str] = field(default_factory=list)
    shortened: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    dropped_lines: int = 0

    def reason(self) -> str:
        """The plan in a sentence or two."""
        parts = []
        for items, words in (
            (self.dangling, "removes the entries of missing files"),
            (self.duplicates, "removes second entries of the same file"),
            (self.refreshed, "updates the entries of changed memories"),
            (self.dated, "makes relative dates absolute in the entries of"),
            (self.shortened, f"shortens entries over {MAX_ENTRY_CHARS} characters"),
            (self.added, "adds entries for memories the index did not list"),
            (self.left_out, "leaves out the entries of the oldest memories to fit its caps"),
        ):
            if items:
                parts.append(f"{words} ({_names(items)})")
        if self.dropped_lines:
            parts.append(f"drops {self.dropped_lines} lines that are not entries to fit its caps")
        return ("MEMORY.md: " + "; ".join(parts) + ".") if parts else "MEMORY.md: unchanged."


def _names(items: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _entry_line(title: str, key: str, hook: str) -> str:
    """An entry that fits HOOK_CHARS, shortening its hook (then its title) as needed."""
    line = format_index_entry(title, key, hook)
    if len(line) <= HOOK_CHARS:
        return line
    room = HOOK_CHARS - len(format_index_entry(title, key, "x")) + 1
    if room >= 20:
        return format_index_entry(title, key, shorten(hook, room))
    return format_index_entry(shorten(title, 40), key, shorten(hook, 60))


@dataclass
class _Line:
    text: str
    key: str | None  # the topic file an entry names, None for other lines


def _lines_of(text: str) -> list[str]:
    return [line.rstrip("\r") for line in text.split("\n")]


def _size(lines: Sequence[_Line]) -> tuple[int, int]:
    return index_size("\n".join(line.text for line in lines))


def _repair(
    text: str, files: Mapping[str, TopicFile], changed: Collection[str], plan: IndexPlan
) -> list[_Line]:
    out: list[_Line] = []
    seen: set[str] = set()
    for raw in _lines_of(text):
        entries = parse_index_entries(raw)
        entry = entries[0] if entries else None
        if entry is None or entry.path is None or not entry.path.endswith(".md"):
            out.append(_Line(raw, None))
            continue
        key = entry.path
        if key not in files:
            plan.dangling.append(key)
            continue
        if key in seen:
            plan.duplicates.append(key)
            continue
        seen.add(key)
        line, topic = raw, files[key]
        if key in changed:
            fresh = _entry_line(topic.title, key, topic.description)
            if fresh != raw:
                line = fresh
                plan.refreshed.append(key)
        elif relative_dates(entry.hook):
            hook, _ = make_dates_absolute(entry.hook, topic.day)
            line = format_index_entry(entry.title, key, hook)
            plan.dated.append(key)
        if len(line) > MAX_ENTRY_CHARS:
            current = parse_index_entries(line)[0]
            line = _entry_line(current.title, key, current.hook)
            plan.shortened.append(key)
        out.append(_Line(line, key))
    # Blank runs collapse to one; no blank lines at either end.
    tidy: list[_Line] = []
    for kept in out:
        if not kept.text.strip() and (not tidy or not tidy[-1].text.strip()):
            continue
        tidy.append(kept)
    while tidy and not tidy[-1].text.strip():
        tidy.pop()
    return tidy


def _add(
    lines: list[_Line], files: Mapping[str, TopicFile], keys: Iterable[str], plan: IndexPlan
) -> None:
    listed = {line.key for line in lines}
    missing = sorted(  # newest first; in the order given when as new; never a file no link reaches
        (files[key] for key in keys if key in files and key not in listed and is_linkable(key)),
        key=lambda f: -f.mtime_ms,
    )
    for topic in missing:
        lines.append(_Line(_entry_line(topic.title, topic.key, topic.description), topic.key))
        plan.added.append(topic.key)


def _prune(
    lines: list[_Line], files: Mapping[str, TopicFile], caps: tuple[int, int], plan: IndexPlan
) -> None:
    max_lines, max_bytes = caps

    def over() -> bool:
        count, size = _size(lines)
        return count > max_lines or size > max_bytes

    if not over():
        return
    for line in lines:  # first, every entry to one short line
        if line.key is not None and len(line.text) > HOOK_CHARS:
            entry = parse_index_entries(line.text)[0]
            line.text = _entry_line(entry.title, line.key, entry.hook)
            if line.key not in plan.shortened:
                plan.shortened.append(line.key)
    entries = [(line.key, line) for line in lines if line.key is not None]
    for key, line in sorted(entries, key=lambda pair: (files[pair[0]].mtime_ms, pair[0])):
        if not over():
            return
        lines.remove(line)
        plan.left_out.append(key)
    while over() and lines:
        lines.pop()
        plan.dropped_lines += 1


def _text(lines: Sequence[_Line]) -> str:
    text = "\n".join(line.text for line in lines).strip("\n")
    return text + "\n" if text else ""


def plan_index(
    text: str,
    files: Mapping[str, TopicFile],
    *,
    changed: Collection[str] = (),
    add: Iterable[str] | None = None,
    caps: tuple[int, int] = (MAX_INDEX_LINES, MAX_INDEX_BYTES),
) -> IndexPlan:
    """The index `text` made consistent with `files` (every topic file that will exist, by key)
    and within `caps` (lines, bytes).

    Entries of files not in `files` and second entries of a file are removed; entries of the
    `changed` files are rewritten from their title and description; relative dates in other
    entries' hooks are made absolute against their file's day; entries over 200 characters are
    shortened. Entries are added for the keys in `add` (every unlisted file when None) that the
    index does not list, newest first. Then, while over a cap, entries are shortened to about
    150 characters, the entries of the oldest files are left out and, last, other lines are
    dropped from the end. Other lines (headings, prose, links elsewhere) are kept otherwise.
    """
    plan = IndexPlan("")
    lines = _repair(text, files, changed, plan)
    _add(lines, files, files if add is None else add, plan)
    _prune(lines, files, caps, plan)
    plan.text = _text(lines)
    return plan


def fit_index(text: str, keys: Collection[str], created: Mapping[str, tuple[str, str]]) -> str:
    """`text` (an index as a person approved it) fitted to the files that will exist: entries
    of files not in `keys` go, and each created file (key → title, description) the index does
    not list gets an entry. Nothing else is touched, caps included: the person saw them."""
    kept = []
    listed = set()
    for raw in _lines_of(text):
        entries = parse_index_entries(raw)
        path = entries[0].path if entries else None
        if path is not None and path.endswith(".md") and path not in keys:
            continue
        if path is not None:
            listed.add(path)
        kept.append(raw)
    body = "\n".join(kept).rstrip("\n")
    for key, (title, description) in created.items():
        if key not in listed and is_linkable(key):
            body += ("\n" if body else "") + _entry_line(title, key, description)
    return body + "\n" if body else ""


def index_checks(
    text: str, keys: Collection[str], caps: tuple[int, int], had_entries: bool
) -> list[dict[str, str]]:
    """The checks shown beside a proposed index: over a cap or empty (bad: never applied
    without a person's tick), entries of files that will not exist, over-long lines."""
    checks = []
    count, size = index_size(text)
    max_lines, max_bytes = caps
    if count > max_lines or size > max_bytes:
        checks.append(
            {
                "code": "cap",
                "level": "bad",
                "message": f"{count} lines, {size:,} bytes: over the caps of {max_lines} lines "
                f"and {max_bytes:,} bytes, so agents would not see its end",
            }
        )
    entries = parse_index_entries(text)
    if had_entries and not entries:
        checks.append(
            {"code": "empty_index", "level": "bad", "message": "leaves the index with no entries"}
        )
    dangling = [e.path for e in entries if e.path and e.path.endswith(".md") and e.path not in keys]
    if dangling:
        checks.append(
            {
                "code": "dangling",
                "level": "warn",
                "message": f"entries of files that will not exist: {_names(dangling)}",
            }
        )
    long = [e.path or e.target for e in entries if e.length > MAX_ENTRY_CHARS]
    if long:
        checks.append(
            {
                "code": "long_entries",
                "level": "warn",
                "message": f"entries over {MAX_ENTRY_CHARS} characters: {_names(long)}",
            }
        )
    return checks


@dataclass(frozen=True)
class Risk:
    """Something about a whole proposal a person must tick explicitly before it is applied."""

    code: str
    message: str


def store_risks(
    file_count: int, deleted: int, index_emptied: bool, index_over_caps: str = ""
) -> list[Risk]:
    """A proposal that deletes more than a quarter of a store's memories, leaves its index
    with no entries while memories remain, or writes its index over a cap (`index_over_caps`:
    which, in words) is never applied without an explicit tick."""
    risks = []
    if file_count and deleted / file_count > RISKY_DELETE_SHARE:
        share = round(100 * deleted / file_count)
        risks.append(
            Risk(
                "deletes_quarter",
                f"deletes {deleted} of the store's {file_count} memories ({share} %), more "
                "than a quarter",
            )
        )
    if index_emptied:
        risks.append(Risk("empties_index", "leaves MEMORY.md with no entries"))
    if index_over_caps:
        risks.append(
            Risk(
                "index_over_caps",
                f"leaves MEMORY.md over its caps ({index_over_caps}), so agents would not see "
                "its end",
            )
        )
    return risks
