"""Comparing two versions of a file: what changed, for a person to review (docs/design.md §13,
§14, §23).

Two shapes, one per kind of review: :func:`compare_file` (a snapshot update or a proposal: the
change, a frontmatter table, a side-by-side body diff, secrets and the caps an agent applies)
and :func:`line_diff` (a memory's history, a conflict, a team-sync change: one column, so it
reads on a phone, with the changed words of a changed line named). Both are plain data; the web
layer's `memapp.web.diff` draws them.
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from memapp.memdir.freshness import MAX_SURFACED_BYTES
from memapp.memdir.frontmatter import decode_bytes, parse_memory
from memapp.memdir.index import INDEX_FILENAME, MAX_INDEX_BYTES, MAX_INDEX_LINES, index_size
from memapp.memdir.secret_rules import SecretHit, scan_text

__all__ = [
    "CONTEXT",
    "Change",
    "DiffRow",
    "FieldChange",
    "FileChange",
    "Line",
    "LineDiff",
    "compare_file",
    "content_sha256",
    "line_diff",
    "side_by_side",
]

CONTEXT = 3  # unchanged lines kept on each side of a change
Change = Literal["added", "removed", "changed", "unchanged"]
# Words, with what joins them inside a date, a path or a version (2026-03-05, a/b.md, 1.2.3).
_WORDS = re.compile(r"\s+|\w+(?:[-./:]\w+)*|[^\w\s]")


def content_sha256(data: bytes) -> str:
    """The lowercase hex SHA-256 of `data` (how a review ties a decision to what was seen)."""
    return hashlib.sha256(data).hexdigest()


# --- one file, side by side -------------------------------------------------------------------


@dataclass(frozen=True)
class FieldChange:
    key: str
    local: str | None  # None: absent on that side
    snapshot: str | None


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side diff. ``kind`` is equal, replace, delete, insert, or skip
    (``count`` unchanged lines not shown)."""

    kind: str
    left_no: int | None = None
    left: str | None = None
    right_no: int | None = None
    right: str | None = None
    count: int = 0


@dataclass(frozen=True)
class FileChange:
    """One top-level file, compared between the local memory dir and the snapshot."""

    name: str
    change: Change
    local_sha256: str | None
    snapshot_sha256: str | None
    frontmatter: tuple[FieldChange, ...] = ()
    rows: tuple[DiffRow, ...] = ()
    unified: str = ""
    secrets: tuple[SecretHit, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def applicable(self) -> bool:
        """Whether applying the snapshot can write this file (added or changed, no secret)."""
        return self.change in ("added", "changed") and not self.secrets

    @property
    def replace_removes(self) -> bool:
        """Whether "replace" deletes this local file (a top-level ``*.md`` not in the snapshot)."""
        return self.change == "removed" and self.name.endswith(".md")


def _text(data: bytes) -> str:
    return decode_bytes(data)[0]


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, datetime.date):
        return value.isoformat()
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _frontmatter_changes(old: Mapping, new: Mapping) -> tuple[FieldChange, ...]:
    keys = list(dict.fromkeys([*map(str, old), *map(str, new)]))
    old_s = {str(k): _value(v) for k, v in old.items()}
    new_s = {str(k): _value(v) for k, v in new.items()}
    return tuple(
        FieldChange(key, old_s.get(key), new_s.get(key))
        for key in keys
        if old_s.get(key) != new_s.get(key)
    )


def side_by_side(old: str, new: str, context: int = CONTEXT) -> list[DiffRow]:
    """A side-by-side line diff of two texts; unchanged runs longer than ``2 * context`` lines
    are folded into one ``skip`` row (``context`` lines kept on each side of a change)."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffRow] = []
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            first, last = index == 0, index == len(opcodes) - 1
            keep_head = 0 if first else context
            keep_tail = 0 if last else context
            length = i2 - i1
            if len(opcodes) > 1 and length > keep_head + keep_tail + 1:
                for k in range(keep_head):
                    rows.append(DiffRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k]))
                rows.append(DiffRow("skip", count=length - keep_head - keep_tail))
                for k in range(length - keep_tail, length):
                    rows.append(DiffRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k]))
            else:
                for k in range(length):
                    rows.append(DiffRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k]))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            left = i1 + k if i1 + k < i2 else None
            right = j1 + k if j1 + k < j2 else None
            if left is None:
                kind = "insert"
            elif right is None:
                kind = "delete"
            else:
                kind = "replace"
            rows.append(
                DiffRow(
                    kind,
                    None if left is None else left + 1,
                    None if left is None else a[left],
                    None if right is None else right + 1,
                    None if right is None else b[right],
                )
            )
    return rows


def _checks_for(name: str, data: bytes) -> tuple[str, ...]:
    """Broken frontmatter and the caps an agent applies, for one snapshot file."""
    problems = []
    text, decode_problem = decode_bytes(data)
    if decode_problem:
        problems.append(decode_problem)
    if name == INDEX_FILENAME:
        lines, size = index_size(text)
        if lines > MAX_INDEX_LINES:
            problems.append(
                f"{lines} lines: the agent loads only the first {MAX_INDEX_LINES} lines"
            )
        if size > MAX_INDEX_BYTES:
            problems.append(
                f"{size:,} bytes: the agent loads only the first {MAX_INDEX_BYTES:,} bytes"
            )
    elif name.endswith(".md") and not decode_problem:
        memory = parse_memory(text)
        if memory.problem:
            problems.append(f"broken frontmatter: {memory.problem}")
        elif not memory.has_frontmatter:
            problems.append("no frontmatter")
        if len(data) > MAX_SURFACED_BYTES:
            problems.append(
                f"{len(data):,} bytes: recall surfaces only the first {MAX_SURFACED_BYTES:,} bytes"
            )
    return tuple(problems)


def compare_file(name: str, local: bytes | None, theirs: bytes | None) -> FileChange:
    """One file compared between two versions, as the review shows it: the change, a
    frontmatter table and a side-by-side body diff (none when the new version has a secret),
    its secrets and its problems. Snapshot and proposal reviews both use it."""
    local_sha = None if local is None else content_sha256(local)
    their_sha = None if theirs is None else content_sha256(theirs)
    if theirs is None:
        return FileChange(name, "removed", local_sha, None)
    secrets = tuple(scan_text(_text(theirs)))
    problems = _checks_for(name, theirs)
    if local is None:
        change: Change = "added"
    elif local_sha == their_sha:
        change = "unchanged"
    else:
        change = "changed"
    fields: tuple[FieldChange, ...] = ()
    rows: tuple[DiffRow, ...] = ()
    unified = ""
    if change == "changed" and not secrets:
        old_text, new_text = _text(local or b""), _text(theirs)
        if name.endswith(".md") and name != INDEX_FILENAME:
            old_memory, new_memory = parse_memory(old_text), parse_memory(new_text)
            fields = _frontmatter_changes(old_memory.frontmatter, new_memory.frontmatter)
            if old_memory.has_frontmatter and new_memory.has_frontmatter:
                old_text, new_text = old_memory.body, new_memory.body
        rows = tuple(side_by_side(old_text, new_text))
        unified = "".join(
            difflib.unified_diff(
                _text(local or b"").splitlines(keepends=True),
                _text(theirs).splitlines(keepends=True),
                f"local/{name}",
                f"snapshot/{name}",
            )
        )
    elif change == "added" and not secrets:
        rows = tuple(side_by_side("", _text(theirs)))
    return FileChange(name, change, local_sha, their_sha, fields, rows, unified, secrets, problems)


# --- one column, for a person reading on any screen -------------------------------------------


@dataclass(frozen=True)
class Line:
    """One line of a one-column diff: `kind` is `same`, `add`, `del` or `gap` (unchanged lines
    left out); `old` and `new` are its line numbers on each side (None where it has none);
    `words` is the line cut into words and `changed` the (start, end) runs of words that differ
    from its counterpart on the other side (empty for a line with no counterpart)."""

    kind: str
    old: int | None
    new: int | None
    text: str
    words: tuple[str, ...] = ()
    changed: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class LineDiff:
    rows: list[Line]
    added: int
    removed: int

    @property
    def same(self) -> bool:
        return not self.added and not self.removed


def _joined(words: list[str], spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Spans with only blanks between them become one; blanks at a span's ends are left out."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and not "".join(words[merged[-1][1] : start]).strip():
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    trimmed = []
    for start, end in merged:
        while start < end and not words[start].strip():
            start += 1
        while end > start and not words[end - 1].strip():
            end -= 1
        if start < end:
            trimmed.append((start, end))
    return tuple(trimmed)


def _word_pair(old: str, new: str) -> tuple[Line, Line]:
    """Both lines cut into words, with the runs of words that differ named (numbers filled in
    by the caller)."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    old_spans, new_spans = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            if i2 > i1:
                old_spans.append((i1, i2))
            if j2 > j1:
                new_spans.append((j1, j2))
    return (
        Line("del", None, None, old, tuple(a), _joined(a, old_spans)),
        Line("add", None, None, new, tuple(b), _joined(b, new_spans)),
    )


def line_diff(old: str | None, new: str | None, context: int = CONTEXT) -> LineDiff:
    """The diff from `old` to `new` (None: the file did not exist), unchanged stretches
    beyond `context` lines folded into a gap row."""
    a = (old or "").splitlines()
    b = (new or "").splitlines()
    rows: list[Line] = []
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    end = (0, 0)
    for group in matcher.get_grouped_opcodes(context):
        if group[0][1] > 0 or group[0][3] > 0:
            rows.append(Line("gap", None, None, ""))
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                rows += [Line("same", i1 + k + 1, j1 + k + 1, a[i1 + k]) for k in range(i2 - i1)]
                continue
            removed += i2 - i1
            added += j2 - j1
            pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
            marked = [_word_pair(a[i1 + k], b[j1 + k]) for k in range(pairs)]
            rows += [
                replace(marked[k][0], old=i1 + k + 1)
                if k < pairs
                else Line("del", i1 + k + 1, None, a[i1 + k])
                for k in range(i2 - i1)
            ]
            rows += [
                replace(marked[k][1], new=j1 + k + 1)
                if k < pairs
                else Line("add", None, j1 + k + 1, b[j1 + k])
                for k in range(j2 - j1)
            ]
        end = (group[-1][2], group[-1][4])
    if rows and (end[0] < len(a) or end[1] < len(b)):
        rows.append(Line("gap", None, None, ""))
    return LineDiff(rows, added, removed)
