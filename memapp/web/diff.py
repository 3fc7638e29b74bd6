"""Line diffs for people: what changed between two texts, as rows a template draws (one
column, so it reads on a phone), with the changed words of a changed line marked."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

CONTEXT = 3
# Words, with what joins them inside a date, a path or a version (2026-03-05, a/b.md, 1.2.3).
_WORDS = re.compile(r"\s+|\w+(?:[-./:]\w+)*|[^\w\s]")


@dataclass(frozen=True)
class Row:
    """One line of a diff: `kind` is `same`, `add`, `del` or `gap` (unchanged lines left out);
    `old` and `new` are its line numbers on each side (None where it has none)."""

    kind: str
    old: int | None
    new: int | None
    html: SafeString

    @property
    def sign(self) -> str:
        return {"add": "+", "del": "−", "same": " ", "gap": "⋯"}[self.kind]


@dataclass(frozen=True)
class Diff:
    rows: list[Row]
    added: int
    removed: int

    @property
    def same(self) -> bool:
        return not self.added and not self.removed


def _joined(words: list[str], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans with only blanks between them become one (`<mark>two words</mark>`)."""
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
    return trimmed


def _marked(words: list[str], spans: list[tuple[int, int]]) -> SafeString:
    spans = _joined(words, spans)
    out, at = [], 0
    for start, end in spans:
        out.append(escape("".join(words[at:start])))
        out.append(f"<mark>{escape(''.join(words[start:end]))}</mark>")
        at = end
    out.append(escape("".join(words[at:])))
    return mark_safe("".join(out))  # every piece of text above is escaped


def _word_pair(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Both lines with the words that differ marked."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    old_spans, new_spans = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            if i2 > i1:
                old_spans.append((i1, i2))
            if j2 > j1:
                new_spans.append((j1, j2))
    return _marked(a, old_spans), _marked(b, new_spans)


def diff_lines(old: str | None, new: str | None, context: int = CONTEXT) -> Diff:
    """The diff from `old` to `new` (None: the file did not exist), unchanged stretches
    beyond `context` lines folded into a gap row."""
    a = (old or "").splitlines()
    b = (new or "").splitlines()
    rows: list[Row] = []
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    end = (0, 0)
    for group in matcher.get_grouped_opcodes(context):
        if group[0][1] > 0 or group[0][3] > 0:
            rows.append(Row("gap", None, None, mark_safe("")))
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                rows += [
                    Row("same", i1 + k + 1, j1 + k + 1, escape(a[i1 + k])) for k in range(i2 - i1)
                ]
                continue
            removed += i2 - i1
            added += j2 - j1
            pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
            marked = [_word_pair(a[i1 + k], b[j1 + k]) for k in range(pairs)]
            rows += [
                Row("del", i1 + k + 1, None, marked[k][0] if k < pairs else escape(a[i1 + k]))
                for k in range(i2 - i1)
            ]
            rows += [
                Row("add", None, j1 + k + 1, marked[k][1] if k < pairs else escape(b[j1 + k]))
                for k in range(j2 - j1)
            ]
        end = (group[-1][2], group[-1][4])
    if rows and (end[0] < len(a) or end[1] < len(b)):
        rows.append(Row("gap", None, None, mark_safe("")))
    return Diff(rows, added, removed)
