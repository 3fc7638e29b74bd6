"""Past-context search (docs/design.md §14.9, §14.10): one function over a person's own sessions
and the memories they may see, ranked, with highlighted snippets. A session's summary that holds
every word comes before its entries: it says in a paragraph what the entries say in pages.

SQLite (the embedded default) answers from FTS5 tables that triggers keep up to date; PostgreSQL
from its full-text search (a GIN index on the transcript text). Both take the same query: the
words of what was typed, all of them required, the last one also as a prefix (so "deplo" finds
"deploy"). Only entries detect-secrets has checked are searched.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

from django.db import connection
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memapp.lifecycle.models import SessionSummary
from memapp.stores.models import Store

__all__ = ["MAX_QUERY", "Hit", "SearchResult", "search_past_context"]

MAX_QUERY = 500
MAX_TERMS = 12
START, STOP = "\x02", "\x03"  # around a matched term in a snippet; never in stored text
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Hit:
    kind: str  # session or memory
    title: str
    snippet: str  # the matched terms between START and STOP
    score: float  # higher is better, comparable within a kind
    session_id: int | None = None  # Session.pk
    agent_session_id: str = ""  # the agent's session id
    seq: int | None = None
    when: datetime.datetime | None = None
    store_id: int | None = None
    path: str = ""

    @property
    def snippet_html(self) -> SafeString:
        text = escape(self.snippet).replace(START, "<mark>").replace(STOP, "</mark>")
        return mark_safe(text)  # escaped above; only the marks are markup

    @property
    def snippet_text(self) -> str:
        """The snippet as plain text, matched terms in **bold** (for agents and the CLI)."""
        return self.snippet.replace(START, "**").replace(STOP, "**")


@dataclass
class SearchResult:
    query: str
    memories: list[Hit] = field(default_factory=list)
    sessions: list[Hit] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.memories and not self.sessions


def _terms(query: str) -> list[str]:
    return _WORD.findall(query[:MAX_QUERY].casefold())[:MAX_TERMS]


def search_past_context(user, query: str, limit: int = 20) -> SearchResult:
    """The memories `user` may see and the entries of their own sessions that contain every
    word of `query`, best first, at most `limit` of each."""
    result = SearchResult(query)
    terms = _terms(query)
    if not terms or not user.is_authenticated:
        return result
    stores = list(Store.objects.visible_to(user).values_list("pk", flat=True))
    search = _sqlite if connection.vendor == "sqlite" else _postgresql
    result.memories, result.sessions = search(user, terms, stores, limit)
    result.sessions = (_summaries(user, terms, limit) + result.sessions)[:limit]
    return result


def _summaries(user, terms: list[str], limit: int) -> list[Hit]:
    """The summaries of `user`'s sessions holding every term (the last also as a prefix, as
    everywhere here), each with a snippet around its first match."""
    found = SessionSummary.objects.filter(session__owner=user, updates__gt=0)
    for term in terms:
        found = found.filter(text__icontains=term)
    hits = []
    for summary in found.select_related("session").order_by("-updated_at")[:limit]:
        folded = summary.text.casefold()
        first = min((folded.find(t) for t in terms if t in folded), default=0)
        start = max(0, first - 60)
        snippet = summary.text[start : first + 140].replace("\n", " ")
        for term in terms:
            snippet = re.sub(
                rf"({re.escape(term)}\w*)", START + r"\1" + STOP, snippet, flags=re.IGNORECASE
            )
        session = summary.session
        hits.append(
            Hit(
                "summary",
                session.title or session.session_id,
                ("…" if start else "") + snippet + "…",
                float(len(terms)),
                session_id=session.pk,
                agent_session_id=session.session_id,
                when=summary.updated_at,
            )
        )
    return hits


def _sqlite(user, terms: list[str], stores: list[int], limit: int):
    match = " ".join(f'"{t}"' for t in terms[:-1]) + f' "{terms[-1]}"*'
    memories: list[Hit] = []
    with connection.cursor() as cursor:
        if stores:
            marks = ",".join(["%s"] * len(stores))
            cursor.execute(
                f"""SELECT m.id, m.store_id, m.path, m.name,
                    snippet(lifecycle_memory_fts, -1, char(2), char(3), '…', 16),
                    bm25(lifecycle_memory_fts, 3.0, 2.0, 1.0) AS score
                FROM lifecycle_memory_fts
                JOIN memapp_memoryfile m ON m.id = lifecycle_memory_fts.rowid
                WHERE lifecycle_memory_fts MATCH %s AND m.store_id IN ({marks})
                ORDER BY score LIMIT %s""",
                [match, *stores, limit],
            )
            memories = [
                Hit("memory", name or path, snippet, -score, store_id=store, path=path)
                for _, store, path, name, snippet, score in cursor.fetchall()
            ]
        cursor.execute(
            """SELECT e.session_id, e.seq, e.timestamp, s.session_id, s.title,
                snippet(lifecycle_entry_fts, 0, char(2), char(3), '…', 16),
                bm25(lifecycle_entry_fts) AS score
            FROM lifecycle_entry_fts
            JOIN lifecycle_transcriptentry e ON e.id = lifecycle_entry_fts.rowid
            JOIN lifecycle_session s ON s.id = e.session_id
            WHERE lifecycle_entry_fts MATCH %s AND s.owner_id = %s AND e.gate_checked
            ORDER BY score LIMIT %s""",
            [match, user.pk, limit],
        )
        sessions = [_session_hit(row) for row in cursor.fetchall()]
    return memories, sessions


def _session_hit(row) -> Hit:
    session_pk, seq, timestamp, agent_id, title, snippet, score = row
    if isinstance(timestamp, str):  # SQLite's raw cursor gives text
        timestamp = datetime.datetime.fromisoformat(timestamp)
    if timestamp is not None and timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=datetime.UTC)
    return Hit(
        "session",
        title or agent_id,
        snippet,
        -score if connection.vendor == "sqlite" else score,
        session_id=session_pk,
        agent_session_id=agent_id,
        seq=seq,
        when=timestamp,
    )


_HEADLINE = "StartSel=\x02, StopSel=\x03, MaxWords=24, MinWords=8, MaxFragments=2"


def _postgresql(user, terms: list[str], stores: list[int], limit: int):
    tsquery = " & ".join(f"'{t}'" for t in terms[:-1]) + (" & " if len(terms) > 1 else "")
    tsquery += f"'{terms[-1]}':*"
    memories: list[Hit] = []
    vector = (
        "setweight(to_tsvector('english', m.name), 'A') || "
        "setweight(to_tsvector('english', m.description), 'B') || "
        "setweight(to_tsvector('english', m.body), 'C')"
    )
    with connection.cursor() as cursor:
        if stores:
            cursor.execute(
                f"""SELECT m.store_id, m.path, m.name,
                    ts_headline('english', m.description || E'\\n' || m.body, q, %s), rank
                FROM (
                    SELECT m.id, ts_rank({vector}, q) AS rank, q
                    FROM memapp_memoryfile m, to_tsquery('english', %s) q
                    WHERE m.store_id = ANY(%s) AND ({vector}) @@ q
                    ORDER BY rank DESC LIMIT %s
                ) best JOIN memapp_memoryfile m ON m.id = best.id
                ORDER BY rank DESC""",
                [_HEADLINE, tsquery, stores, limit],
            )
            memories = [
                Hit("memory", name or path, snippet, score, store_id=store, path=path)
                for store, path, name, snippet, score in cursor.fetchall()
            ]
        cursor.execute(
            """SELECT e.session_id, e.seq, e.timestamp, s.session_id, s.title,
                ts_headline('english', e.text, q, %s), rank
            FROM (
                SELECT e.id, ts_rank(to_tsvector('english', e.text), q) AS rank, q
                FROM lifecycle_transcriptentry e
                JOIN lifecycle_session s ON s.id = e.session_id,
                to_tsquery('english', %s) q
                WHERE to_tsvector('english', e.text) @@ q AND s.owner_id = %s AND e.gate_checked
                ORDER BY rank DESC LIMIT %s
            ) best
            JOIN lifecycle_transcriptentry e ON e.id = best.id
            JOIN lifecycle_session s ON s.id = e.session_id
            ORDER BY rank DESC""",
            [_HEADLINE, tsquery, user.pk, limit],
        )
        sessions = [_session_hit(row) for row in cursor.fetchall()]
    return memories, sessions
