"""One ranking rule for every search a person or an agent makes (docs/design.md §24).

The Search and store pages, past-context search (the Sessions page's search,
``GET /api/v1/search``, ``memhub-agent search``, the MCP ``search`` tool) all rank by offline
recall's rule (docs/design.md §7, :mod:`memapp.memdir.offline_recall`): BM25F with stemming,
engineering synonyms (so "unreliable pipeline" finds "Flaky CI job" and "pytest speed" finds
"slow tests"), action words weighed little, a nudge for type and age. Every text matching a
word of the query or one of its synonyms is kept, best first, without recall's thresholds and
limit (a person searching wants the weak matches too, below the strong ones); an unrelated
query gets nothing.

Memories are ranked from their store's :class:`RecallIndex` (:meth:`RecallIndex.rank`). Session
entries and summaries are too many to hold in memory: the database's full-text index finds the
ones holding any of :func:`match_terms` (a candidate set), and :func:`rank_passages` ranks them by
the same rule. What matched is marked by :func:`marked_spans` (the same words, and the query as
typed), between :data:`START` and :data:`STOP` in a :func:`snippet`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .offline_recall import STOP_WORDS, SYNONYMS, RecallIndex, _stem, match_spans
from .scan import MemoryHeader

__all__ = [
    "MAX_QUERY",
    "START",
    "STOP",
    "Passage",
    "mark",
    "marked_spans",
    "match_terms",
    "rank_passages",
    "word_terms",
    "snippet",
]

MAX_QUERY = 500  # characters of a query that count; the rest is ignored
MAX_TERMS = 64  # words and phrases a database is asked for, synonyms included
START, STOP = "\x02", "\x03"  # around a match in a snippet; never in stored text
SNIPPET_CHARS = 180

_WORD = re.compile(r"[a-z0-9]+")


@functools.cache
def _groups() -> tuple[tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...], ...]:
    """Each synonym group's members as (" stems joined ", stems, words as written), worked out
    once: a query is matched against every group."""
    groups = []
    for group in SYNONYMS:
        members = []
        for member in group.split(","):
            words = tuple(_WORD.findall(member.lower()))
            stems = tuple(_stem(w) for w in words)
            members.append((f" {' '.join(stems)} ", stems, words))
        groups.append(tuple(members))
    return tuple(groups)


@dataclass(frozen=True, slots=True)
class Passage:
    """A text to rank that is not a memory file: a session entry or a session's summary.
    ``text`` counts as a memory's body does, ``when_ms`` as its mtime; ``key`` is the caller's."""

    key: Any
    text: str
    when_ms: int


def _prefix(stem: str) -> str:
    # "dependency" and "dependencies" share the stem's start, not the stem.
    return stem.removesuffix("y") if len(stem) > 4 else stem


def match_terms(query: str, written: bool = False) -> list[tuple[str, ...]]:
    """What a text must hold (any one of them) to be ranked for ``query``: each word of the
    query as a prefix of its stem (``tests`` → ``test``, which also finds ``testing``), and every
    member of a synonym group the query touches, phrases as word sequences. Lower-case letters
    and digits only, so any database's query syntax can quote them as they are.

    With ``written``, the same terms with their words as the query or the synonym table writes
    them, for an index that stems words itself and is asked for them whole (SQLite's, whose
    stemmer is not this one: ``flaky`` is its ``flaki``, which the prefix ``flak`` finds but
    the word ``flak`` does not)."""
    words = _WORD.findall(query[:MAX_QUERY].lower())
    stems = [_stem(w) for w in words]
    terms: dict[tuple[str, ...], tuple[str, ...]] = {}
    for word, stem in zip(words, stems, strict=True):
        if len(word) >= 2 and word not in STOP_WORDS:
            terms.setdefault((_prefix(stem),), (word,))
    joined = f" {' '.join(stems)} "
    for group in _groups():
        if any(phrase in joined for phrase, member, _ in group if member):
            for _, member, as_written in group:
                terms.setdefault((*member[:-1], _prefix(member[-1])), as_written)
    kept = [(t, w) for t, w in terms.items() if t and any(len(x) >= 2 for x in t)][:MAX_TERMS]
    return [w if written else t for t, w in kept]


def word_terms(query: str, written: bool = False) -> list[list[tuple[str, ...]]]:
    """:func:`match_terms` of each distinct word of ``query`` on its own: a text holding a term
    of every group holds every word of the query (or a synonym of it)."""
    words = dict.fromkeys(_WORD.findall(query[:MAX_QUERY].lower()))
    return [terms for word in words if (terms := match_terms(word, written))]


def rank_passages(
    query: str, passages: Sequence[Passage], now_ms: float | None = None
) -> list[tuple[Passage, float]]:
    """``passages`` that match ``query``, best first, with their scores: the rule memories are
    ranked by, the passages standing in for a store's files."""
    headers = [
        MemoryHeader("", p.when_ms, len(p.text), None, None, None, None, None) for p in passages
    ]
    texts = iter([p.text for p in passages])
    index = RecallIndex.build(headers, lambda _path: next(texts))  # asked once a header, in order
    by_header = {id(h): p for h, p in zip(index.headers, passages, strict=True)}
    return [(by_header[id(h)], score) for h, score in index.rank(query[:MAX_QUERY], now_ms)]


def marked_spans(query: str, text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds what ranked it for ``query`` (its words, their synonyms) or the
    query as typed (part of a word, a path), as merged ``(start, end)`` spans in order."""
    query = query[:MAX_QUERY]
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


def mark(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with each span between :data:`START` and :data:`STOP`."""
    out, at = [], 0
    for start, end in spans:
        start, end = max(start, at), min(end, len(text))
        if end <= start:
            continue
        out += [text[at:start], START, text[start:end], STOP]
        at = end
    out.append(text[at:])
    return "".join(out)


def snippet(query: str, text: str, width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around its first match, on one line, matches
    marked; ``""`` when nothing matches."""
    spans = marked_spans(query, text)
    if not spans:
        return ""
    first = spans[0][0]
    start = max(0, first - width // 3)
    if start:
        space = text.find(" ", start, first)
        start = space + 1 if space != -1 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", first, end)
        end = space if space > first else end
    inside = [(s - start, e - start) for s, e in spans if s < end]
    piece = mark(text[start:end], inside).replace("\r", " ").replace("\n", " ")
    return ("… " if start else "") + piece + (" …" if end < len(text) else "")
