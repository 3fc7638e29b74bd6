"""Past-context search (docs/design.md §14.9, §24): one function over a person's own sessions
and the memories they may see, ranked by the one rule of `memapp.memdir.ranking`, with
highlighted snippets. A session's summary comes before the entries: it says in a paragraph what
the entries say in pages.

Memories are the Search page's (`memapp.stores.memory_search`). Session entries are found by the
database's full-text index, asked for the caller's own entries only (SQLite: an FTS5 table
whose `owner` column is indexed beside the text, kept up to date by triggers; PostgreSQL: each
entry's stored `tsvector`, reached from the caller's sessions or its GIN index), holding any
word of the query or of its synonyms, at most CANDIDATES of them, then ranked here like
memories; an entry holding the query as typed (part of a word) follows the ranked ones. Only
entries detect-secrets has checked are searched.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Q
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memapp.lifecycle.models import SessionSummary
from memapp.memdir.ranking import (
    MAX_QUERY,
    START,
    STOP,
    Passage,
    match_terms,
    rank_passages,
    snippet,
    word_terms,
)
from memapp.stores.memory_search import best_memories
from memapp.stores.models import Store
from memapp.stores.withheld import withheld

__all__ = ["MAX_QUERY", "Hit", "SearchResult", "search_past_context"]

CANDIDATES = 200  # entries (and summaries) the database finds for the ranking to order
MAX_TEXT = 16_384  # characters of an entry read for its ranking and snippet


@dataclass(frozen=True)
class Hit:
    kind: str  # memory, summary or session (an entry of one)
    title: str
    snippet: str  # the matched terms between START and STOP
    score: float  # higher is better
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


def search_past_context(
    user, query: str, limit: int = 20, *, for_agent: bool = False
) -> SearchResult:
    """The memories `user` may see and the entries of their own sessions that match `query`,
    best first, at most `limit` of each; `for_agent`: without the team files memhub gives no
    agent (memapp.stores.withheld)."""
    result = SearchResult(query)
    query = query[:MAX_QUERY].strip()
    terms = match_terms(query)
    if not terms or not user.is_authenticated:
        return result
    stores = list(Store.objects.visible_to(user))
    kept = {(store.pk, key) for store in stores for key in withheld(store)} if for_agent else set()
    found = [
        (memory, score)
        for memory, score in best_memories(stores, query, limit + len(kept))
        if (memory.store_id, memory.path) not in kept
    ]
    result.memories = [_memory_hit(query, *hit) for hit in found[:limit]]
    passages = _summaries(user, terms) + _entries(user, query, terms)
    ranked = rank_passages(query, passages)
    literal = query.casefold()
    if len(literal) >= 2:  # what holds the query as typed, as on the Search page
        seen = {id(p) for p, _ in ranked}
        ranked += sorted(
            ((p, 0.0) for p in passages if id(p) not in seen and literal in p.text.casefold()),
            key=lambda row: -row[0].when_ms,
        )
    summaries = [(p, s) for p, s in ranked if p.key[0] == "summary"]
    entries = [(p, s) for p, s in ranked if p.key[0] == "session"]
    # Snippets of the hits shown only: a snippet costs more than the ranking of its passage.
    result.sessions = [_hit(query, p, s) for p, s in (summaries + entries)[:limit]]
    return result


def _memory_hit(query: str, memory, score: float) -> Hit:
    text = f"{memory.description}\n{memory.body}"
    return Hit(
        "memory",
        memory.title,
        snippet(query, text) or memory.description,
        score,
        store_id=memory.store_id,
        path=memory.path,
    )


def _hit(query: str, passage: Passage, score: float) -> Hit:
    kind, session_pk, agent_id, title, seq, when = passage.key
    return Hit(
        kind,
        title or agent_id,
        snippet(query, passage.text) or passage.text[:180],
        score,
        session_id=session_pk,
        agent_session_id=agent_id,
        seq=seq,
        when=when,
    )


def _ms(when: datetime.datetime | None) -> int:
    return int(when.timestamp() * 1000) if when is not None else 0


def _summaries(user, terms: list[tuple[str, ...]]) -> list[Passage]:
    """The summaries of `user`'s sessions holding any of `terms`, newest first."""
    holds = Q()
    for term in terms:
        holds |= Q(text__icontains=" ".join(term))
    found = SessionSummary.objects.filter(holds, session__owner=user, updates__gt=0)
    passages = []
    for summary in found.select_related("session").order_by("-updated_at")[:CANDIDATES]:
        session = summary.session
        key = ("summary", session.pk, session.session_id, session.title, None, summary.updated_at)
        passages.append(Passage(key, summary.text, _ms(summary.updated_at)))
    return passages


def _entry(row) -> Passage:
    session_pk, seq, timestamp, agent_id, title, text = row
    if isinstance(timestamp, str):  # SQLite's raw cursor gives text
        timestamp = datetime.datetime.fromisoformat(timestamp)
    if timestamp is not None and timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=datetime.UTC)
    return Passage(("session", session_pk, agent_id, title, seq, timestamp), text, _ms(timestamp))


def _entries(user, query: str, terms: list[tuple[str, ...]]) -> list[Passage]:
    """At most CANDIDATES of the caller's entries for the ranking, newest first: those holding
    every word of the query (or a synonym of it), then those holding any term. Newest first is
    what the index can answer without scoring every match (ordering by the index's own rank
    scored each of them: 160–220 ms over 200,000 entries when the words are common, against
    about 5 ms); the ranking that follows orders the candidates."""
    if connection.vendor == "sqlite":
        return _sqlite_entries(user, query, terms)
    # The words as written: PostgreSQL stems them (and their prefixes) by its own stemmer.
    every = word_terms(query, written=True)
    found = _postgresql(user, every) if len(every) > 1 else []
    if len(found) < CANDIDATES:
        seen = {p.key for p in found}
        found += [
            p for p in _postgresql(user, [match_terms(query, written=True)]) if p.key not in seen
        ]
    return found[:CANDIDATES]


def _sqlite_entries(user, query: str, terms: list[tuple[str, ...]]) -> list[Passage]:
    """The candidates from FTS5, whole words before parts of one. FTS5 finds a prefix by
    reading every entry that holds a word it begins, everyone's, before it looks at the owner;
    a whole word, by skipping through its list to the owner's entries (two common words and
    their synonyms over 2,000,000 entries: 92 ms of CPU as prefixes, 3 ms whole). So it is
    asked for whole words first (as written: FTS5 stems them itself), and for the last word
    as a prefix only while fewer than CANDIDATES are found: a query still being typed
    (`migra`), or words the caller seldom used. An earlier word is not asked for as a prefix
    ("config" of "configuration"): the ranking does not count that, and the query as typed
    holds it whole."""
    whole = [_any(group) for group in word_terms(query, written=True)]
    anything = _any(match_terms(query, written=True))
    if whole:
        begun = _any(word_terms(query)[-1], prefix=True)
        every = [*whole[:-1], f"({whole[-1]} OR {begun})"]
        stages = [" AND ".join(whole), " AND ".join(every), anything, f"({anything} OR {begun})"]
    else:  # only a synonym's phrase of short or common words ("now and then")
        stages = [anything, f"({anything} OR {_any(terms, prefix=True)})"]
    found: list[Passage] = []
    for match in dict.fromkeys(stages):  # a one-word query asks for each once
        seen = {p.key for p in found}
        found += [p for p in _sqlite(user, match) if p.key not in seen]
        if len(found) >= CANDIDATES:
            break
    return found[:CANDIDATES]


def _any(terms: list[tuple[str, ...]], prefix: bool = False) -> str:
    """An FTS5 expression holding any of `terms` (phrases of letters and digits, quoted as
    they are), each's last word as a prefix with `prefix`."""
    star = "*" if prefix else ""
    return "(" + " OR ".join(f'"{" ".join(term)}"{star}' for term in terms) + ")"


def _sqlite(user, match: str) -> list[Passage]:
    # The owner's entries only, from the index (its `owner` column).
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT e.session_id, e.seq, e.timestamp, s.session_id, s.title, substr(e.text, 1, %s)
            FROM lifecycle_entry_fts
            JOIN lifecycle_transcriptentry e ON e.id = lifecycle_entry_fts.rowid
            JOIN lifecycle_session s ON s.id = e.session_id
            WHERE lifecycle_entry_fts MATCH %s AND s.owner_id = %s AND e.gate_checked
            ORDER BY lifecycle_entry_fts.rowid DESC LIMIT %s""",
            [MAX_TEXT, f'owner : "{int(user.pk)}" AND text : ({match})', user.pk, CANDIDATES],
        )
        return [_entry(row) for row in cursor.fetchall()]


def _postgresql(user, every: list[list[tuple[str, ...]]]) -> list[Passage]:
    # `text_search` is the entry's stored tsvector; the planner starts from the owner's
    # sessions, or from its GIN index when few entries anywhere match (kept apart from the
    # ORDER BY … LIMIT, which could send it backwards through every entry's id instead).
    tsquery = " & ".join(
        "("
        + " | ".join(
            "(" + " <-> ".join([*(f"'{w}'" for w in term[:-1]), f"'{term[-1]}':*"]) + ")"
            for term in group
        )
        + ")"
        for group in every
    )
    with connection.cursor() as cursor:
        cursor.execute(
            """WITH found AS MATERIALIZED (
                SELECT e.id FROM lifecycle_transcriptentry e
                JOIN lifecycle_session s ON s.id = e.session_id
                WHERE e.text_search @@ to_tsquery('english', %s) AND s.owner_id = %s
                  AND e.gate_checked
            )
            SELECT e.session_id, e.seq, e.timestamp, s.session_id, s.title, left(e.text, %s)
            FROM (SELECT id FROM found ORDER BY id DESC LIMIT %s) best
            JOIN lifecycle_transcriptentry e ON e.id = best.id
            JOIN lifecycle_session s ON s.id = e.session_id
            ORDER BY e.id DESC""",
            [tsquery, user.pk, MAX_TEXT, CANDIDATES],
        )
        return [_entry(row) for row in cursor.fetchall()]
