"""Offline recall: which memories fit a query, without a language model (docs/design.md §7).

The candidates are the newest-first manifest of a scan (at most 200 files). Each is scored with
BM25F over four fields: its name, its description, its path and its body, weighted in that
order (the description is what an agent's own selector reads; the body only breaks ties and
rescues files whose header is broken). On top of that:

- words are lower-cased and split at non-letters (a mixed-case word such as ``InvoiceDTO`` is
  kept whole and also split), stop words are dropped and the rest lightly stemmed (``tests``
  and ``testing`` both become ``test``);
- a small table of engineering synonyms (:data:`SYNONYMS`) maps words to shared concepts, so
  "flaky tests" finds a memory about "intermittent failures". A word matching exactly scores
  more than one matching only through its concept;
- words that say what to do rather than what about ("add", "write", "fix") count for little;
- a memory's type and age nudge its score (feedback slightly up, recent files slightly up),
  but never make an unrelated memory relevant;
- for tools the agent is using, usage docs of that tool are skipped (the agent already has them)
  while warnings, gotchas and known issues about it are kept, and ranked higher;
- already surfaced memories are removed before selection, so every slot goes to a new memory;
- a memory must pass an absolute threshold (a normalised score, so it means the same for 20
  files or 2,000) and a relative one (a fraction of the best match's score), so an unrelated
  query gets nothing and a precise query gets one or two memories, not five.

The constants below were set on the ``dev`` half of the labelled set in ``evalset/`` (see
``python -m memapp.bench.recall_eval``); the ``holdout`` half was written afterwards to check them.

:class:`RecallIndex` holds the analysed candidates and answers queries without touching the
disk; :func:`recall_offline` keeps one per directory, rebuilt only when the scan's
``(path, mtime_ms, size)`` stamps change, and then re-reads only the files that changed.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import os
import re
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .frontmatter import parse_memory
from .scan import MemoryHeader, scan_memory_files
from .store_files import read_file

__all__ = [
    "RELATIVE",
    "SYNONYMS",
    "RecallIndex",
    "clear_recall_cache",
    "match_spans",
    "recall_index",
    "recall_offline",
    "select_reason",
]

RECALL_LIMIT = 5
CANDIDATES = 200  # docs/design.md §7: the candidates are the manifest, the newest 200 files
MAX_BODY_BYTES = 32 * 1024  # bodies beyond this add little to a ranking that weighs them lightly

# -- scoring constants --------------------------------------------------------------------------
# BM25F: per-field weight and length normalisation; one saturation constant.
K1 = 1.2
FIELDS = ("name", "description", "path", "body")
FIELD_WEIGHTS = {"name": 3.0, "description": 2.0, "path": 1.5, "body": 0.5}
FIELD_B = {"name": 0.5, "description": 0.75, "path": 0.5, "body": 0.75}
# IDF is computed as if the directory also held this many memories about other things: in a
# store of three files that all mention "deploy", the word still tells them from the rest of the
# world. Without it a small store's shared words weigh nothing and nothing passes MIN_SCORE.
BACKGROUND_DOCS = 50
CONCEPT_WEIGHT = 0.7  # a match through a synonym counts for less than the word itself
# Words that say what to do rather than what about ("add", "write", "fix"): in a query they
# count for this much, so "write a haiku" does not pick a memory about writing migrations.
ACTION_WEIGHT = 0.25
# A gotcha about a tool the agent is using right now is worth more (it is when it matters).
TOOL_GOTCHA_BOOST = 1.5
TYPE_PRIOR = {"feedback": 1.1, "project": 1.0, "reference": 1.0, "user": 1.0, None: 0.95}
RECENCY_BOOST = 0.1  # at most +10%, for a file saved just now; halves every RECENCY_HALF_LIFE
RECENCY_HALF_LIFE_DAYS = 30.0
# A memory is selected when its score, divided by the largest idf the index can give (so the
# figure does not grow with the number of files), reaches MIN_SCORE, and it is within RELATIVE
# of the best candidate's score.
MIN_SCORE = 0.9
RELATIVE = 0.6


# -- text analysis ------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
# InvoiceDTO, GitHub, pytestXdist. Tried only where a run of letters starts: from every letter
# of a long run without a case switch, the search took time growing with the run's square (a
# 20,000-letter line, 7 s of a recall).
_MIXED = re.compile(r"(?<![A-Za-z])[A-Za-z]*[a-z][A-Z][A-Za-z]*")
_CASE_SWITCH = re.compile(r"[a-z][A-Z]")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English function words and the filler of requests to an assistant ("can you please help me
# look at ..."): they say nothing about which memory fits.
STOP_WORDS = _word_set(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each either else etc ever every few for from further get gets getting got
    had hadn has hasn have haven having he her here hers herself him himself his how however i
    if in into is isn it its itself just let lets like ll me might more most much must mustn
    my myself need needs no nor not now of off ok okay on once one only or other ought our ours
    ourselves out over own please re really same shall shan she should shouldn so some such
    than thank thanks that the their theirs them themselves then there these they this those
    through to too under until up us use used using very via ve was wasn way we were weren
    what when where whether which while who whom whose why will with won would wouldn yet you
    your yours yourself yourselves s t d m
    anything something someone thing things stuff kind sort bit lot lots maybe
    help go going want wants wanted know think look looks see seems try trying sure
    """
)


# Action words of requests to an assistant (see ACTION_WEIGHT), as written; stemmed below.
ACTION_WORDS = _word_set(
    """
    add adding added write writing make made create update change changes changed fix fixing
    run running rename implement new show explain find list check put move call work works
    start give tell ask keep describe summarize draw convert compute correctly properly
    better good bad big small latest every whole quick quickly
    """
)


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A light suffix stripper: plurals, -ing, -ed, -ly, -ment, -ion, then a final -e.

    Enough to join ``test/tests/testing``, ``cache/cached/caching``, ``migrate/migration`` and
    ``deploy/deployment``; irregular families (``fail/failure``) are joined by the synonym table.
    A stem keeps at least three letters, so short words are left alone.
    """
    n = len(word)
    if n <= 3 or word.isdigit():
        return word
    if word in _STEM_EXCEPTIONS:
        return _STEM_EXCEPTIONS[word]
    if word.endswith("ies") and n > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed", "ly", "ment", "ion"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            doubled = len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz"
            if suffix in ("ing", "ed") and doubled:
                word = word[:-1]  # running -> run, but install(ed) and pass(ed) stay
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


# Words whose stem would join them to an unrelated word (paging -> page, settings -> set).
_STEM_EXCEPTIONS = {"paging": "paging", "news": "news", "setting": "setting", "settings": "setting"}


# Groups of words an engineer uses for the same thing. Each group is one concept: a query word in
# a group also matches memories using any other word of the group (at CONCEPT_WEIGHT); phrases
# are matched as a unit; stemming takes care of plurals and -ing forms. Keep groups tight: a word
# may sit in two groups, but a group of loosely related words makes every query match everything.
SYNONYMS: tuple[str, ...] = (
    # testing
    "flaky, flake, flakiness, intermittent, intermittently, sporadic, sporadically, "
    "nondeterministic, sometimes fail, randomly fail, now and then, occasionally fail, unreliable, "
    "race condition",
    "test, testing, spec, test suite, pytest, unittest",
    "mock, mocking, stub, fake, monkeypatch",
    # failures
    "fail, failure, failing, broken, break, red, error",
    "error, exception, traceback, stack trace, crash",
    "bug, defect, regression",
    "timeout, time out, times out, timed out, hang, hung, stuck, never returns",
    "outage, incident, downtime, goes down, went down, postmortem, post mortem, sev1",
    "slow, slowness, sluggish, latency, speed up, faster, performance, perf",
    "oom, out of memory, memory pressure, memory leak, oomkilled",
    # infrastructure
    "ci, continuous integration, pipeline, github actions, workflow, build",
    "database, db, postgres, postgresql, psql, sql, mysql, sqlite",
    "cache, caching, redis, memcached",
    "queue, celery, worker, job, background task, task queue, queue depth",
    "kubernetes, k8s, kube, eks, cluster, pod",
    "docker, container, docker compose, compose",
    "deploy, deployment, rollout, ship, argocd",
    "release, cut a release, version tag",
    "production, prod",
    "environment, env",
    "staging, preprod, pre production",
    "configuration, config, settings",
    "secret, credential, api key, token, password",
    "rate limit, rate limited, throttle, throttling, throttled, 429, too many requests",
    "monitoring, metrics, dashboard, grafana, observability, panel",
    "paging, paged, pager, pagerduty, on call, oncall, escalation",
    "log, logging, logger, structlog, print",
    "search, searching, opensearch, elasticsearch, reindex",
    # code and review
    "pull request, pr, prs, merge request, diff, changeset",
    "review, reviewer, approve, approval, code review",
    "owner, owns, codeowners, responsible, maintainer",
    "commit, commit message",
    "branch, branches",
    "repository, repo, monorepo, codebase",
    "dependency, dependencies, deps, library, libraries, requirements, pip",
    "migration, migrate, schema change, alter table, column",
    "type hints, typing, type check, type checking, mypy, annotations",
    "lint, linter, linting, ruff, flake8, eslint",
    "format, formatter, formatting, black, prettier, line length",
    "style, convention, naming",
    "documentation, docs, doc, wiki, readme",
    "runbook, playbook",
    "feature flag, flag, toggle, waffle, feature switch",
    "api, endpoint",
    "n+1, n plus one, select related, prefetch related",
    # product and domain
    "money, amount, price, pricing, cost, decimal, cents, float",
    "invoice, invoicing, billing, bill",
    "payment, pay, paid, stripe, charge, refund",
    "customer, account, tenant",
    "email, mail, smtp, postmark, sendgrid, transactional email",
    "vendor, provider, third party, service provider",
    "translation, translate, translatable, i18n, localization, l10n, gettext, language",
    "accessibility, a11y, screen reader, wcag, keyboard navigation",
    "gdpr, personal data, anonymize, erase, erasure, right to be forgotten, data deletion, "
    "deletion request, pii",
    "frontend, front end, ui, react, javascript, typescript, js, ts, tsx",
    "backend, back end, server side, django",
    "bundle, bundle size, bundle budget",
    "setup, set up, onboarding, local dev, local development, getting started",
    "tax, vat, sales tax",
    "date, datetime, timezone, time zone, utc, dst",
)

# What a tool's usage doc and a gotcha about it look like, for the tool-aware rule.
USAGE_WORDS = _word_set(
    "usage reference cheatsheet cheat guide manual howto docs documentation syntax options flags "
    "commands examples tips patterns"
)
USAGE_PHRASES = ("how to use", "how to", "cheat sheet", "using the")
GOTCHA_WORDS = _word_set(
    "warning warnings warn gotcha gotchas caveat caveats pitfall pitfalls bug bugs known broken "
    "breaks fail fails failing hang hangs hung stuck never avoid careful beware cannot workaround "
    "trap silently truncates ignores skips crash crashes leak leaks problem problems"
)
GOTCHA_PHRASES = ("known issue", "don't", "do not", "doesn't", "can't", "won't", "not activated")
# Tool names that are ordinary words: a memory is about them only when it says "<name> tool".
_GENERIC_TOOLS = _word_set("read write edit task agent skill")
_TOOL_ALIASES = {"bash": ("bash", "shell"), "grep": ("grep", "ripgrep"), "glob": ("glob",)}
# Filename prefixes of the client's naming convention (user_role.md) say the type, not the topic.
_PATH_NOISE = _word_set("user feedback project reference team md")


@dataclass(frozen=True, slots=True)
class _Token:
    surface: str  # the word as written, lower-cased
    stem: str
    concepts: tuple[str, ...]


def _build_synonyms() -> tuple[dict[str, tuple[str, ...]], dict[tuple[str, ...], tuple[str, ...]]]:
    words: dict[str, list[str]] = {}
    phrases: dict[tuple[str, ...], list[str]] = {}
    for group in SYNONYMS:
        members = [m.strip() for m in group.split(",")]
        concept = "~" + members[0]
        for member in members:
            stems = tuple(_stem(w) for w in _WORD.findall(member.lower()))
            target = words.setdefault(stems[0], []) if len(stems) == 1 else None
            if target is None:
                target = phrases.setdefault(stems, [])
            if concept not in target:
                target.append(concept)
    return (
        {k: tuple(v) for k, v in words.items()},
        {k: tuple(v) for k, v in phrases.items()},
    )


_WORD_CONCEPTS, _PHRASE_CONCEPTS = _build_synonyms()
_PHRASE_LENGTHS = sorted({len(k) for k in _PHRASE_CONCEPTS}, reverse=True)
_PHRASE_STARTS = frozenset(k[0] for k in _PHRASE_CONCEPTS)


def _split_camel(match: re.Match[str]) -> str:
    # Keep the word whole (GitHub is "github" to everyone) and add its parts (InvoiceDTO).
    word = match.group(0)
    return f"{word} {' '.join(_CAMEL_PART.findall(word))}"


def _tokens(text: str) -> list[_Token]:
    """The analysed words of ``text``: stop words dropped, synonyms and phrases resolved."""
    if not text:
        return []
    if _MIXED.search(text):
        text = _MIXED.sub(_split_camel, text)
    surfaces = _WORD.findall(text.lower())
    stems = [_stem(w) for w in surfaces]
    out: list[_Token] = []
    for i, (surface, stem) in enumerate(zip(surfaces, stems, strict=True)):
        concepts = _WORD_CONCEPTS.get(stem, ())
        if stem in _PHRASE_STARTS:
            for n in _PHRASE_LENGTHS:
                phrase = _PHRASE_CONCEPTS.get(tuple(stems[i : i + n]))
                if phrase:
                    concepts = (*concepts, *(c for c in phrase if c not in concepts))
        if surface in STOP_WORDS or len(surface) < 2 or (surface.isdigit() and len(surface) < 3):
            if concepts:  # "out of memory" starts with a stop word and still means something
                out.append(_Token(surface, "", concepts))
            continue
        out.append(_Token(surface, stem, concepts))
    return out


def _path_text(path: str) -> str:
    words = _WORD.findall(path.removesuffix(".md").lower())
    return " ".join(w for w in words if w not in _PATH_NOISE)


def _term_counts(text: str) -> tuple[dict[str, int], int]:
    counts: dict[str, int] = {}
    length = 0
    for token in _tokens(text):
        if token.stem:
            counts[token.stem] = counts.get(token.stem, 0) + 1
            length += 1
        for concept in token.concepts:
            counts[concept] = counts.get(concept, 0) + 1
    return counts, length


# -- the index ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Doc:
    """One analysed memory: term counts and length per field, and what the tool rule needs."""

    stamp: tuple[str, int, int]
    fields: tuple[tuple[dict[str, int], int], ...]  # in FIELDS order
    head: str  # " word word ... ": name, description and path, for the tool rule
    body_terms: frozenset[str]
    usage_doc: bool
    gotcha: bool


def _analyse(header: MemoryHeader, body: str) -> _Doc:
    name = header.name or ""
    description = header.description or ""
    path = _path_text(header.path)
    fields = tuple(_term_counts(text) for text in (name, description, path, body))
    text = f"{name}\n{description}\n{path}".lower()
    words = _WORD.findall(text.replace("_", " "))
    return _Doc(
        stamp=(header.path, header.mtime_ms, header.size),
        fields=fields,
        head=f" {' '.join(words)} ",
        body_terms=frozenset(fields[3][0]),
        usage_doc=header.type == "reference"
        or not USAGE_WORDS.isdisjoint(words)
        or any(p in text for p in USAGE_PHRASES),
        gotcha=not GOTCHA_WORDS.isdisjoint(words) or any(p in text for p in GOTCHA_PHRASES),
    )


BodySource = Callable[[str], "str | None"] | Mapping[str, str]


# A term this share of the documents or more hold is summed from a column (`_column`), one per
# term kept for this many terms an index at most (8 bytes a document each).
_COLUMN_SHARE = 8
_COLUMNS_KEPT = 16


class RecallIndex:
    """Analysed candidates of one directory (or store), ready to answer queries.

    Build it with :meth:`build` from headers in manifest order (newest first) and a source of
    bodies. The index does not change once built (but for the search weights it keeps for an
    hour, replaced whole) and is safe to share between threads; keep one per
    store and build a new one when the store changes (pass the old one as ``previous`` so only
    changed files are read again). ``bodies_read`` says how many bodies the build asked for.
    """

    __slots__ = (
        "_columns",
        "_docs",
        "_hourly",
        "_idf",
        "_postings",
        "_priors",
        "_tool_docs",
        "bodies_read",
        "headers",
        "key",
        "max_idf",
        "paths",
    )

    def __init__(self, headers: Sequence[MemoryHeader], docs: Sequence[_Doc], bodies_read: int):
        self.headers: tuple[MemoryHeader, ...] = tuple(headers)
        self.key: tuple[tuple[str, int, int], ...] = tuple(d.stamp for d in docs)
        self.paths = frozenset(h.path for h in self.headers)
        self.bodies_read = bodies_read
        self._docs = tuple(docs)
        self._hourly: tuple[int, array[float]] | None = None
        self._columns: dict[str, array[float]] = {}  # see `_column`
        self._priors = tuple(TYPE_PRIOR.get(h.type, 1.0) for h in self.headers)
        # The documents the tool rule may boost or skip (usage docs and gotchas): a few.
        self._tool_docs = frozenset(i for i, d in enumerate(docs) if d.usage_doc or d.gotcha)
        n = len(docs)
        avg = [
            max(1.0, sum(d.fields[f][1] for d in docs) / n) if n else 1.0
            for f in range(len(FIELDS))
        ]
        weights = [FIELD_WEIGHTS[f] for f in FIELDS]
        bs = [FIELD_B[f] for f in FIELDS]
        # tf of a term in a document, BM25F style: field counts, each normalised by its field's
        # length and weighted, summed; then saturated once. Stored saturated, so a query only adds.
        tfs: dict[str, dict[int, float]] = {}
        for i, doc in enumerate(docs):
            for f, (counts, length) in enumerate(doc.fields):
                norm = weights[f] / (1.0 - bs[f] + bs[f] * length / avg[f])
                for term, count in counts.items():
                    row = tfs.setdefault(term, {})
                    row[i] = row.get(i, 0.0) + count * norm
        self._postings: dict[str, tuple[tuple[int, float], ...]] = {
            term: tuple((i, tf / (K1 + tf)) for i, tf in row.items()) for term, row in tfs.items()
        }
        self._idf = {term: _idf(n + BACKGROUND_DOCS, len(row)) for term, row in tfs.items()}
        self.max_idf = _idf(n + BACKGROUND_DOCS, 1)

    @classmethod
    def build(
        cls,
        headers: Sequence[MemoryHeader],
        bodies: BodySource | None = None,
        previous: RecallIndex | None = None,
    ) -> RecallIndex:
        """Index ``headers`` (manifest order) with their bodies.

        ``bodies`` maps a header's path to its body (the text after the frontmatter; a whole
        file is fine too), as a mapping or a callable returning ``None`` for a file it cannot
        read; ``None`` indexes headers only. Files whose ``(path, mtime_ms, size)`` match a
        document of ``previous`` reuse its analysis without asking for the body.
        """
        get = bodies.get if isinstance(bodies, Mapping) else bodies
        known = {d.stamp: d for d in previous._docs} if previous is not None else {}
        docs = []
        read = 0
        for h in headers:
            doc = known.get((h.path, h.mtime_ms, h.size))
            if doc is None:
                body = ""
                if get is not None:
                    read += 1
                    body = get(h.path) or ""
                doc = _analyse(h, body)
            docs.append(doc)
        return cls(headers, docs, read)

    def __len__(self) -> int:
        return len(self.headers)

    def search(
        self,
        query: str,
        recent_tools: Iterable[str] = (),
        already_surfaced: Iterable[str] = (),
        limit: int = RECALL_LIMIT,
        now_ms: float | None = None,
    ) -> list[MemoryHeader]:
        """The memories that fit ``query``, best first, at most ``limit``; ``[]`` when none does.

        ``already_surfaced`` paths are never returned (and do not take a slot);
        ``recent_tools`` skips usage docs of those tools (see the module docstring).
        """
        return [
            self.headers[i]
            for i, _score in self._ranked(query, recent_tools, already_surfaced, limit, now_ms)
        ]

    def scores(
        self,
        query: str,
        recent_tools: Iterable[str] = (),
        already_surfaced: Iterable[str] = (),
        limit: int = RECALL_LIMIT,
        now_ms: float | None = None,
    ) -> list[tuple[MemoryHeader, float]]:
        """Like :meth:`search`, with each memory's normalised score (for tuning and display)."""
        return [
            (self.headers[i], score)
            for i, score in self._ranked(query, recent_tools, already_surfaced, limit, now_ms)
        ]

    def rank(self, query: str, now_ms: float | None = None) -> list[tuple[MemoryHeader, float]]:
        """Every memory matching a word of ``query`` or one of its synonyms, best first, with
        its normalised score: scored as :meth:`search` scores, without its thresholds and
        limit (a person searching wants the weak matches too, ranked below the strong ones)."""
        ranked = sorted(self.scored(query, now_ms).items(), key=lambda row: (-row[1], row[0]))
        return [(self.headers[i], score) for i, score in ranked]

    def scored(self, query: str, now_ms: float | None = None) -> dict[int, float]:
        """:meth:`rank`'s scores by position in :attr:`headers`, in no order: for a caller that
        wants only the best few of many matches, or to look one up."""
        weights = self._weights(time.time() * 1000 if now_ms is None else now_ms)
        return {i: score * weights[i] for i, score in self._score(query).items()}

    def scored_list(self, query: str, now_ms: float | None = None) -> array[float]:
        """:meth:`scored`'s scores by position in :attr:`headers`, the same floats, 0.0 for a
        memory that does not match (every match scores above 0): for a search of a large
        store, which a broad query matches most of. Summed and weighted by NumPy, a term at a
        time in :meth:`_score`'s order (adding a 0.0 keeps a sum; x * w is w * x), so bit for
        bit the floats of :meth:`scored`: in Python, the float made for each of 20,000 files
        at each step was a fifth of such a search's CPU (35.6 -> 28.0 ms). An array of
        doubles, not a list: the garbage collector walked a list of 20,000 floats at each
        collection."""
        import numpy as np  # only a store search needs it: 0.1 s to import, for no other caller

        scores = np.zeros(len(self.headers))
        for term, weight in self._term_weights(query).items():
            postings = self._postings.get(term)
            if postings is None:
                continue
            w = weight * self._idf[term]
            if len(postings) * _COLUMN_SHARE >= len(scores):
                scores += np.frombuffer(self._column(term, postings)) * w
            else:
                at, saturated = np.array(postings).T
                scores[at.astype(np.intp)] += saturated * w
        weights = self._weights(time.time() * 1000 if now_ms is None else now_ms)
        scores *= np.frombuffer(weights)
        listed = array("d")
        listed.frombytes(scores.data.cast("B"))
        return listed

    def _column(self, term: str, postings: tuple[tuple[int, float], ...]) -> array[float]:
        """The term's saturated tf in every document (0.0 where absent), built on first use
        and kept with the index for its few broadest terms: made from a broad term's postings
        at each search, it would cost what adding them one by one in Python did (their tuples
        lie all over memory)."""
        column = self._columns.get(term)
        if column is None:
            column = array("d", bytes(8 * len(self.headers)))
            for i, saturated in postings:
                column[i] = saturated
            if len(self._columns) >= _COLUMNS_KEPT:
                self._columns.clear()
            self._columns[term] = column
        return column

    def _weights(self, now_ms: float) -> array[float]:
        """Each memory's type prior times its recency boost, normalised, as of the hour of
        ``now_ms`` (a boost halving every 30 days moves by 0.01% in an hour): kept for the hour,
        so a search of a large store does not compute them again for every match."""
        hour = int(now_ms // 3_600_000)
        kept = self._hourly
        if kept is not None and kept[0] == hour:
            return kept[1]
        at, norm = hour * 3_600_000, 1.0 / self.max_idf
        weights = array(
            "d",
            (
                norm
                * TYPE_PRIOR.get(h.type, 1.0)
                * (
                    1.0
                    + RECENCY_BOOST
                    * 0.5 ** (max(0.0, (at - h.mtime_ms) / 86_400_000) / RECENCY_HALF_LIFE_DAYS)
                )
                for h in self.headers
            ),
        )
        self._hourly = (hour, weights)
        return weights

    def _ranked(
        self,
        query: str,
        recent_tools: Iterable[str],
        already_surfaced: Iterable[str],
        limit: int,
        now_ms: float | None,
    ) -> list[tuple[int, float]]:
        if limit <= 0 or not self.headers:
            return []
        raw = self._score(query)
        if not raw:
            return []
        # A lone string is one name, not a sequence of one-letter names.
        surfaced = (
            {already_surfaced} if isinstance(already_surfaced, str) else set(already_surfaced)
        )
        tools = _tool_phrases((recent_tools,) if isinstance(recent_tools, str) else recent_tools)
        if now_ms is None:
            now_ms = time.time() * 1000
        norm, priors, headers = 1.0 / self.max_idf, self._priors, self.headers
        relevance = {i: score * norm * priors[i] for i, score in raw.items()}
        skipped: set[int] = set()
        if tools:
            for i in self._tool_docs.intersection(relevance):
                doc = self._docs[i]
                if any(t in doc.head for t in tools):
                    if doc.gotcha:
                        relevance[i] *= TOOL_GOTCHA_BOOST
                    else:
                        skipped.add(i)  # the agent is using the tool: it has its usage docs
        # The relative bar is set by the best match of all, surfaced or skipped ones included:
        # once the one memory that fits has been surfaced, weak matches stay weak. Only the few
        # matches above both bars are looked at one by one.
        best = max(0.0, *relevance.values())
        bar = max(MIN_SCORE, RELATIVE * best)
        kept: list[tuple[int, float]] = []  # doc, rank score
        for i in [i for i, value in relevance.items() if value >= bar]:
            header = headers[i]
            if i in skipped or header.path in surfaced:
                continue
            age_days = max(0.0, (now_ms - header.mtime_ms) / 86_400_000)
            boost = 1.0 + RECENCY_BOOST * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
            kept.append((i, relevance[i] * boost))
        # Highest score first; equal scores keep manifest order, i.e. newest first.
        kept.sort(key=lambda k: (-k[1], k[0]))
        return kept[:limit]

    def _score(self, query: str) -> dict[int, float]:
        """BM25F score of every document matching a query term (unnormalised)."""
        scores: dict[int, float] = {}
        get = scores.get
        for term, weight in self._term_weights(query).items():
            postings = self._postings.get(term)
            if postings is None:
                continue
            w = weight * self._idf[term]
            if not scores:  # the first term's in one pass (a broad term matches most files)
                scores = {i: w * saturated for i, saturated in postings}
                get = scores.get
                continue
            for i, saturated in postings:
                scores[i] = get(i, 0.0) + w * saturated
        return scores

    @staticmethod
    def _term_weights(query: str) -> dict[str, float]:
        """Each term of ``query`` (stems, synonym concepts) with its weight, in query order."""
        weights: dict[str, float] = {}
        for token in _tokens(query):
            scale = ACTION_WEIGHT if token.surface in ACTION_WORDS else 1.0
            if token.stem:
                weights[token.stem] = max(weights.get(token.stem, 0.0), scale)
            for concept in token.concepts:
                weights[concept] = max(weights.get(concept, 0.0), scale * CONCEPT_WEIGHT)
        return weights

    def reason(self, path: str, query: str) -> str:
        """:func:`select_reason` for the memory at ``path``, looking at its body too."""
        for header, doc in zip(self.headers, self._docs, strict=True):
            if header.path == path:
                return _reason(header, query, doc.body_terms)
        raise KeyError(path)


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _tool_phrases(tools: Iterable[str]) -> tuple[str, ...]:
    """Phrases (" word word ", as in ``_Doc.head``) that mark a memory as about one of ``tools``."""
    phrases: list[str] = []
    for tool in tools:
        name = tool.lower()
        if name.startswith("mcp__"):
            # mcp__<server>__<tool>: a memory about that server's tools says "<server> MCP".
            server = name.split("__")[1]
            candidates = [f"{server} mcp", f"mcp {server}"] if server else []
        elif name in _GENERIC_TOOLS:
            candidates = [f"{name} tool"]
        else:
            candidates = list(_TOOL_ALIASES.get(name, (name,)))
        for phrase in candidates:
            words = _WORD.findall(phrase.replace("_", " "))
            if words:
                phrases.append(f" {' '.join(words)} ")
    return tuple(phrases)


# -- highlighting -------------------------------------------------------------------------------

_TEXT_WORD = re.compile(r"[A-Za-z0-9]+")


class _Verdicts(dict):
    """A query's verdict on each word of a text, ``(stem, matches on its own, may start a
    match)``, judged on first sight and remembered (up to :data:`_JUDGED_WORDS`), so a page of
    results judges each distinct word once and looks the rest up in C (``map``)."""

    def __init__(self, stems: set[str], concepts: frozenset[str]) -> None:
        super().__init__()
        self.stems, self.concepts = stems, concepts
        # The first words of the synonym phrases that share a concept with the query: only
        # these may start a phrase match. Every phrase's first word (as "on" or "test") was,
        # for `deploy`, five times the words that matched, each a step of Python in match_spans.
        self.phrase_starts = frozenset(
            phrase[0]
            for phrase, phrase_concepts in _PHRASE_CONCEPTS.items()
            if not concepts.isdisjoint(phrase_concepts)
        )

    def __missing__(self, word: str) -> tuple[str, bool, bool]:
        stem = _stem(word.lower())
        parts = [stem]
        if word.isalpha() and _CASE_SWITCH.search(word):  # a _MIXED word, in linear time
            parts += [_stem(p.lower()) for p in _CAMEL_PART.findall(word)]
        hit = any(
            (p in self.stems and p not in STOP_WORDS)
            or not self.concepts.isdisjoint(_WORD_CONCEPTS.get(p, ()))
            for p in parts
        )
        verdict = (stem, hit, hit or stem in self.phrase_starts)
        if len(self) < _JUDGED_WORDS:
            self[word] = verdict
        return verdict


@functools.lru_cache(maxsize=64)
def _highlighter(query: str) -> _Verdicts | None:
    """What ``query`` matches for highlighting, None when nothing can."""
    stems: set[str] = set()
    concepts: set[str] = set()
    for token in _tokens(query):
        if token.stem:
            stems.add(token.stem)
        concepts.update(token.concepts)
    if not stems and not concepts:
        return None
    return _Verdicts(stems, frozenset(concepts))


_JUDGED_WORDS = 100_000  # verdicts a query remembers


def match_spans(query: str, text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a word (or a synonym phrase) that a word of ``query`` matches, as
    ``(start, end)`` character spans in order: what the ranking counted, for marking it."""
    verdicts = _highlighter(query)
    if verdicts is None:
        return []
    words = list(_TEXT_WORD.finditer(text))
    judged = list(map(verdicts.__getitem__, map(re.Match.group, words)))
    # Only a word that matches or may start a synonym phrase starts a span: the rest, most of
    # a text, are passed over without a step of Python each.
    starts = itertools.compress(range(len(words)), map(operator.itemgetter(2), judged))
    if not verdicts.concepts:  # no synonym phrase can match: single words only
        return [words[i].span() for i in starts]
    word_stems = [stem for stem, _, _ in judged]
    spans: list[tuple[int, int]] = []
    after = 0
    for i in starts:
        if i < after:
            continue
        taken = 0
        if word_stems[i] in verdicts.phrase_starts:
            for n in _PHRASE_LENGTHS:
                phrase = _PHRASE_CONCEPTS.get(tuple(word_stems[i : i + n]))
                if phrase and 1 < n <= len(words) - i and not verdicts.concepts.isdisjoint(phrase):
                    taken = n
                    break
        if not taken and judged[i][1]:
            taken = 1
        if taken:
            spans.append((words[i].start(), words[i + taken - 1].end()))
            after = i + taken
    return spans


# -- reasons ------------------------------------------------------------------------------------


def select_reason(header: MemoryHeader, query: str, index: RecallIndex | None = None) -> str:
    """A short reason why ``header`` fits ``query``: the words of its name, description or path
    that match, e.g. ``matches: intermittent (≈ flaky), test``. With ``index``, a memory that
    matches only in its body says so."""
    if index is not None:
        try:
            return index.reason(header.path, query)
        except KeyError:
            pass
    return _reason(header, query, frozenset())


def _reason(header: MemoryHeader, query: str, body_terms: frozenset[str]) -> str:
    head = _head_tokens(header.name, header.description, header.path)
    matched: dict[str, None] = {}  # in query order
    body: dict[str, None] = {}
    for q in _query_tokens(query):
        hit = next((t for t in head if q.stem and t.stem == q.stem), None)
        if hit is not None:
            matched.setdefault(hit.surface, None)
            continue
        hit = next((t for t in head if t.stem and not set(t.concepts).isdisjoint(q.concepts)), None)
        if hit is not None:
            matched.setdefault(f"{hit.surface} (≈ {q.surface})", None)
        elif q.stem in body_terms or not body_terms.isdisjoint(q.concepts):
            body.setdefault(q.surface, None)
    if matched:
        return "matches: " + ", ".join(list(matched)[:6])
    if body:
        return "matches in the body: " + ", ".join(list(body)[:6])
    return "related to the query"


# A recall gives a reason for each of its few picks: the query is analysed once for all of
# them, and a memory's head once while it is unchanged.
@functools.lru_cache(maxsize=4096)
def _head_tokens(name: str | None, description: str | None, path: str) -> tuple[_Token, ...]:
    return tuple(_tokens(f"{name or ''}\n{description or ''}\n{_path_text(path)}"))


@functools.lru_cache(maxsize=64)
def _query_tokens(query: str) -> tuple[_Token, ...]:
    return tuple(_tokens(query))


# -- per-directory cache ------------------------------------------------------------------------

_CacheKey = tuple[str, frozenset[str], int]
_cache: OrderedDict[_CacheKey, RecallIndex] = OrderedDict()
_cache_lock = threading.Lock()
MAX_CACHED_DIRECTORIES = 64


def _read_body(root: str, path: str) -> str | None:
    """The body of ``root/path``: at most MAX_BODY_BYTES, by the store's one reader (symlinks
    not followed, atime kept)."""
    try:
        data = read_file(f"{root}/{path}", limit=MAX_BODY_BYTES)
    except OSError:
        return None
    return parse_memory(data).body


def recall_index(
    directory: str | os.PathLike[str],
    exclude: Iterable[str] = (),
    candidates: int = CANDIDATES,
) -> RecallIndex:
    """The index of ``directory``'s newest ``candidates`` memories, from the cache when the scan
    finds the same files with the same mtimes and sizes; otherwise rebuilt, re-reading only the
    files that changed. Raises ``OSError`` when the directory exists but cannot be listed."""
    root = str(Path(directory).absolute())
    excluded = frozenset((exclude,) if isinstance(exclude, str) else exclude)
    key = (root, excluded, candidates)
    headers = scan_memory_files(root, limit=candidates, exclude=excluded)
    stamps = tuple((h.path, h.mtime_ms, h.size) for h in headers)
    with _cache_lock:
        previous = _cache.get(key)
    if previous is not None and previous.key == stamps:
        return previous
    index = RecallIndex.build(headers, lambda path: _read_body(root, path), previous)
    with _cache_lock:
        _cache[key] = index
        _cache.move_to_end(key)
        while len(_cache) > MAX_CACHED_DIRECTORIES:
            _cache.popitem(last=False)
    return index


def clear_recall_cache() -> None:
    """Forget every cached index (tests, or after a bulk change)."""
    with _cache_lock:
        _cache.clear()


def recall_offline(
    directory: str | os.PathLike[str],
    query: str,
    recent_tools: Iterable[str] = (),
    already_surfaced: Iterable[str] = (),
    limit: int = RECALL_LIMIT,
    exclude: Iterable[str] = (),
    *,
    now_ms: float | None = None,
) -> list[MemoryHeader]:
    """The memories of ``directory`` that fit ``query``: at most ``limit``, best first, ``[]``
    when nothing fits (docs/design.md §7, offline selector).

    Candidates are the scan's newest 200 files (``exclude`` as in :func:`scan_memory_files`).
    Paths in the result and in ``already_surfaced`` are relative to ``directory``
    (``already_surfaced`` may also give them as absolute paths under it). ``recent_tools`` are
    tool names as the agent reports them (``Bash``, ``mcp__linear__search_issues``). A missing
    directory gives ``[]``; raises ``OSError`` when it exists but cannot be listed.
    """
    index = recall_index(directory, exclude)
    root = str(Path(directory).absolute()) + "/"
    if isinstance(already_surfaced, str):
        already_surfaced = (already_surfaced,)
    surfaced = [p.removeprefix(root) for p in map(os.fspath, already_surfaced)]
    return index.search(query, recent_tools, surfaced, limit, now_ms)
