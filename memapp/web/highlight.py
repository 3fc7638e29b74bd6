"""Search results with the words that matched marked: in the description, and in a short
snippet of the body around the first match (what matched: `memapp.memdir.ranking`)."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memapp.memdir.ranking import START, STOP, mark, marked_spans
from memapp.memdir.ranking import snippet as marked_snippet


def marked_html(marked: str) -> SafeString:
    """A text marked by `memapp.memdir.ranking`, escaped, its marks as `<mark>`."""
    html = escape(marked).replace(START, '<mark class="hit">').replace(STOP, "</mark>")
    return mark_safe(html)  # escaped above; only the marks are markup


def highlight(query: str, text: str) -> SafeString:
    """`text`, escaped, with what `query` matched marked."""
    return marked_html(mark(text, marked_spans(query, text)) if query else text)


def snippet(query: str, text: str) -> SafeString:
    """About 180 characters of `text` around its first match, marked; empty without one."""
    return marked_html(marked_snippet(query, text) if query else "")
