"""Line diffs drawn for people: the core's one-column comparison
(`memapp.memdir.comparison.line_diff`) as rows a template draws, with the changed words of a
changed line marked. The side-by-side review of a snapshot or a proposal draws the core's
`FileChange` directly (`templates/snapshots/partials/diff.html`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memapp.memdir.comparison import CONTEXT, Line, LineDiff, line_diff


@dataclass(frozen=True)
class Row(Line):
    """A line of the core's diff as a template draws it: `html` is its text escaped, with the
    changed words in `<mark>`; `sign` the mark in its margin."""

    @property
    def sign(self) -> str:
        return {"add": "+", "del": "−", "same": " ", "gap": "⋯"}[self.kind]

    @property
    def html(self) -> SafeString:
        if not self.changed:
            return escape(self.text)
        out, at = [], 0
        for start, end in self.changed:
            out.append(escape("".join(self.words[at:start])))
            out.append(f"<mark>{escape(''.join(self.words[start:end]))}</mark>")
            at = end
        out.append(escape("".join(self.words[at:])))
        return mark_safe("".join(out))  # every piece of text above is escaped


def diff_lines(old: str | None, new: str | None, context: int = CONTEXT) -> LineDiff:
    """The diff from `old` to `new` (None: the file did not exist), ready to draw."""
    found = line_diff(old, new, context)
    return replace(found, rows=[Row(**vars(line)) for line in found.rows])
