"""Line diffs drawn for people: the core's one-column comparison
(`memapp.memdir.comparison.line_diff`) as rows a template draws, with the changed words of a
changed line marked. The side-by-side review of a snapshot or a proposal draws the core's
`FileChange` directly (`templates/snapshots/partials/diff.html`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memapp.memdir.comparison import CONTEXT, Line, line_diff


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


def _html(line: Line) -> SafeString:
    """The line escaped, its changed words in `<mark>`."""
    if not line.changed:
        return escape(line.text)
    words = line.words
    out, at = [], 0
    for start, end in line.changed:
        out.append(escape("".join(words[at:start])))
        out.append(f"<mark>{escape(''.join(words[start:end]))}</mark>")
        at = end
    out.append(escape("".join(words[at:])))
    return mark_safe("".join(out))  # every piece of text above is escaped


def diff_lines(old: str | None, new: str | None, context: int = CONTEXT) -> Diff:
    """The diff from `old` to `new` (None: the file did not exist), ready to draw."""
    found = line_diff(old, new, context)
    rows = [Row(line.kind, line.old, line.new, _html(line)) for line in found.rows]
    return Diff(rows, found.added, found.removed)
