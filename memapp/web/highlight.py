"""Search results with the words that matched marked: in the description, and in a short
snippet of the body around the first match."""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memapp.memdir.offline_recall import match_spans

SNIPPET_CHARS = 180


def _spans(query: str, text: str) -> list[tuple[int, int]]:
    """What the ranking matched, and the query as typed (part of a word, a path)."""
    spans = match_spans(query, text)
    literal = query.strip()
    if len(literal) >= 2:
        spans += [m.span() for m in re.finditer(re.escape(literal), text, re.IGNORECASE)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _mark(text: str, spans: list[tuple[int, int]], offset: int = 0) -> SafeString:
    out, at = [], 0
    for start, end in spans:
        start, end = start - offset, end - offset
        if end <= 0 or start >= len(text):
            continue
        start, end = max(start, 0), min(end, len(text))
        out.append(escape(text[at:start]))
        out.append(f'<mark class="hit">{escape(text[start:end])}</mark>')
        at = end
    out.append(escape(text[at:]))
    return mark_safe("".join(out))  # every piece of text above is escaped


def highlight(query: str, text: str) -> SafeString:
    """`text`, escaped, with what `query` matched marked."""
    return _mark(text, _spans(query, text)) if query else escape(text)


def snippet(query: str, text: str, width: int = SNIPPET_CHARS) -> SafeString:
    """About `width` characters of `text` around its first match, marked; empty without one."""
    spans = _spans(query, text) if query else []
    if not spans:
        return mark_safe("")
    first = spans[0][0]
    start = max(0, first - width // 3)
    if start:
        space = text.find(" ", start, first)
        start = space + 1 if space != -1 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", first, end)
        end = space if space > first else end
    piece = " ".join(text[start:end].split("\n"))
    body = _mark(piece, [s for s in spans if s[0] < end], offset=start)
    return mark_safe(("… " if start else "") + body + (" …" if end < len(text) else ""))
