"""Recall for agents (docs/design.md §7–§8): which few memories fit a query, rendered for the
prompt.

The candidates are each store's newest files (the manifest). With an Anthropic API key the
selection is made by a model through the real `anthropic` SDK; without one, by flag, on any
error of the model, or when the model cannot answer within the time the caller can wait, by the
offline ranker of the core. Selected memories are cut to the surfacing budget (per memory and
per session) and rendered with their freshness headers.

The model is asked in a thread of this worker, never in the request's own: the request waits
for it only as long as its caller can (a hook has well under a second), then answers with the
offline picks while the thread finishes. Every answer of the model is kept in the shared cache,
keyed by the exact request it answered (the store's state as the manifest shows it, the query,
the tools, the model), so the next recall of the same query in the same state has the model's
picks at once, from any worker (docs/design.md §7).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.utils import timezone

from memapp.memdir.freshness import (
    RecalledMemory,
    memory_age,
    memory_age_days,
    memory_header,
    render_recalled,
    truncate_for_surfacing,
)
from memapp.memdir.offline_recall import RELATIVE, RecallIndex, select_reason
from memapp.memdir.scan import MemoryHeader, format_manifest
from memapp.memdir.store_files import read_file
from memapp.stores.events import record_event_later
from memapp.stores.flags import get_flags
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Store
from memapp.stores.prompting import team_store_for
from memapp.stores.recall_stats import count_recalled
from memapp.stores.shared_state import Seen, read, update
from memapp.stores.warm import read_ahead, remembered
from memapp.stores.withheld import withheld

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

SELECTOR_SYSTEM = (
    "You pick which saved memories an AI coding agent should see before it answers a user's "
    "query. You get the query and a list of memory files, one per line with their type, path, "
    "date and a one-line description. Return the paths of the memories that will clearly help "
    "with this query, at most {limit}, best first; return an empty list when none clearly "
    "helps. Be selective: a memory that is only loosely related costs the agent attention. "
    "When a list of recently used tools is given, skip memories that are usage documentation "
    "or reference for those tools (the agent is already using them successfully), but keep "
    "memories that warn about them: gotchas, known issues, bugs, things to avoid."
)
SELECTOR_SCHEMA = {
    "type": "object",
    "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
    "required": ["selected_memories"],
    "additionalProperties": False,
}
SESSION_TTL_S = 24 * 3600
SELECTION_TTL_S = 24 * 3600  # a model's picks for one request, kept for its repeats
# Threads asking the model; more selections than this at once wait their turn (and their
# callers get the offline picks meanwhile).
MODEL_THREADS = 4


@dataclass(frozen=True)
class Candidate:
    """A memory that may be recalled: where it lives and how the agent names it."""

    store: Store
    header: MemoryHeader
    shown_path: str  # the path the agent sees (its own local path when it told us)
    scope: str

    @property
    def manifest_name(self) -> str:
        """How the selector's manifest names it: relative to the memory dir (`team/…` for the
        team's), since absolute paths cost tokens inside the hook's budget."""
        return _shown(self.store, self.header.path, None)


@dataclass
class RecallOutcome:
    memories: list[dict] = field(default_factory=list)
    rendered: str = ""
    selector: str = "offline"
    fallback_reason: str | None = None
    candidates: int = 0


def _shown(store: Store, rel: str, memory_dir: str | None) -> str:
    if store.kind == Store.Kind.TEAM:
        rel = f"team/{rel}"
    return f"{memory_dir.rstrip('/')}/{rel}" if memory_dir else rel


def _stores(user, private: Store, scope: str, flags: dict) -> list[Store]:
    if private.kind == Store.Kind.AGENT:
        return [private]  # an agent recalls from its own memory only
    stores = []
    if scope in ("private", "both"):
        stores.append(private)
    if scope in ("team", "both") and flags["team_memory"]:
        team = team_store_for(user, private.project)
        if team is not None:
            stores.append(team)
    return stores


# One offline index per store, built from the mirror (headers and bodies already in the
# database), reused while the store's newest files are unchanged. The mirror is refreshed by
# every write memhub makes; files changed behind its back are picked up by a rescan at most
# RESCAN_AFTER old.
RESCAN_AFTER = timedelta(seconds=30)
_indexes_by_store: dict[int, RecallIndex] = {}
_indexes_lock = threading.Lock()


def store_recall_index(store: Store, limit: int) -> RecallIndex:
    if store.scanned_at is None or timezone.now() - store.scanned_at > RESCAN_AFTER:
        with store_lock(store):
            store.refresh_from_db(fields=["scanned_at"])  # another worker may have just done it
            if store.scanned_at is None or timezone.now() - store.scanned_at > RESCAN_AFTER:
                rescan_store(store)
    # The mirror changes only with a save of its store, which replaces the warm stamp.
    return remembered(
        ("recall-index", store.pk, limit),
        lambda: index_from_mirror(store, limit, _indexes_by_store, _indexes_lock),
    )


def index_from_mirror(
    store: Store, limit: int | None, cache: dict[int, RecallIndex], lock: threading.Lock
) -> RecallIndex:
    """The offline index of the store's newest `limit` files (None: all), from the mirror's
    rows; the one in `cache` while those files are unchanged, else rebuilt reading only the
    bodies of files that changed."""
    rows = list(
        store.files.order_by("-mtime_ms", "path").values_list(
            "path", "mtime_ms", "size", "name", "description", "type", "type_form", "problem"
        )[:limit]
    )
    stamps = tuple((path, mtime, size) for path, mtime, size, *_ in rows)
    with lock:
        previous = cache.get(store.pk)
    if previous is not None and previous.key == stamps:
        return previous
    headers = [
        MemoryHeader(
            path,
            mtime,
            size,
            name or None,
            description or None,
            type_ or None,
            form or None,
            problem or None,
            has_frontmatter=bool(name or description),
        )
        for path, mtime, size, name, description, type_, form, problem in rows
    ]
    known = set(previous.key) if previous is not None else set()
    wanted = [h.path for h in headers if (h.path, h.mtime_ms, h.size) not in known]
    # One query however many changed: a few by path, many (a first build) by reading them all.
    rows_read = store.files.filter(path__in=wanted) if len(wanted) <= 500 else store.files.all()
    bodies = dict(rows_read.values_list("path", "body").iterator(chunk_size=2000))
    index = RecallIndex.build(headers, bodies, previous)
    with lock:
        cache[store.pk] = index
    return index


def _indexes(stores: list[Store], limit: int):
    return [(store, store_recall_index(store, limit)) for store in stores]


def _surfaced(indexes, surfaced_paths: set[str], memory_dir: str | None) -> set[tuple[int, str]]:
    """The (store id, path) of the memories the agent was already shown: each shown path is
    taken apart as `_shown` puts it together, and looked up among the store's indexed paths."""
    if not surfaced_paths:
        return set()
    found = set()
    for store, index in indexes:
        prefix = _shown(store, "", memory_dir)
        start = len(prefix)
        found.update(
            (store.pk, path[start:])
            for path in surfaced_paths
            if path.startswith(prefix) and path[start:] in index.paths
        )
    return found


def _eligible(indexes, surfaced: set[tuple[int, str]], max_files: int) -> list[tuple]:
    """The (store, header) recall may pick: the stores' newest files not yet surfaced, merged
    newest first and cut to `max_files`."""
    eligible = []
    for store, index in indexes:
        pk = store.pk
        eligible += [
            (store, h) for h in index.headers if not surfaced or (pk, h.path) not in surfaced
        ]
    if len(indexes) > 1:
        eligible.sort(key=lambda row: -row[1].mtime_ms)
    return eligible[:max_files]


def _eligible_count(indexes, surfaced: set[tuple[int, str]], max_files: int) -> int:
    """`len(_eligible(...))` without listing them: `surfaced` holds only indexed files."""
    return min(max_files, sum(len(index) for _store, index in indexes) - len(surfaced))


def select_offline(indexes, query, recent_tools, surfaced, limit) -> list[tuple[Store, object]]:
    """Best offline picks across stores (scores are normalised, so they compare across stores)."""
    scored = []
    for store, index in indexes:
        skip = [rel for (s, rel) in surfaced if s == store.pk]
        scored += [(score, store, h) for h, score in index.scores(query, recent_tools, skip, limit)]
    scored.sort(key=lambda row: -row[0])
    if not scored:
        return []
    best = scored[0][0]
    return [(store, h) for score, store, h in scored if score >= RELATIVE * best][:limit]


@lru_cache(maxsize=4)
def _client(api_key: str, base_url: str, timeout: float) -> anthropic.Anthropic:
    # Imported here: the SDK takes most of a second to import, which every manage.py command
    # and worker would pay at start, most of them never asking a model.
    import anthropic

    return anthropic.Anthropic(
        api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=1
    )


def load_model_client() -> None:
    """When a model selects (an API key is set), import the SDK and what it imports when its
    first client is made (its HTTP transport), so the first recall of a worker does not pay
    for it. No client is kept and nothing is sent."""
    if not settings.ANTHROPIC_API_KEY:
        return
    import anthropic

    anthropic.Anthropic(api_key="not-used", max_retries=0).messages  # noqa: B018


@dataclass(frozen=True)
class ModelRequest:
    """One question to the model: what it is asked, and the cache key of its answer."""

    model: str
    system: str
    user_message: str

    @property
    def key(self) -> str:
        text = json.dumps([self.model, self.system, self.user_message])
        return "memhub:recall-llm:" + hashlib.sha256(text.encode()).hexdigest()[:40]


def model_request(candidates: list[Candidate], query: str, recent_tools, limit: int, model: str):
    shown = [replace(c.header, path=c.manifest_name) for c in candidates]
    user_message = f"Query: {query}\n\nAvailable memories:\n{format_manifest(shown)}"
    if recent_tools:
        user_message += f"\n\nRecently used tools: {', '.join(recent_tools)}"
    return ModelRequest(model, SELECTOR_SYSTEM.format(limit=limit), user_message)


def ask_model(request: ModelRequest) -> list[str]:
    """The paths the model picks, as it wrote them; raises on any error of the model."""
    client = _client(
        settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL, settings.MEMHUB_RECALL_TIMEOUT
    )
    message = client.messages.create(
        model=request.model,
        max_tokens=256,
        system=request.system,
        messages=[{"role": "user", "content": request.user_message}],
        output_config={"format": {"type": "json_schema", "schema": SELECTOR_SCHEMA}},
    )
    text = "".join(block.text for block in message.content if block.type == "text")
    selected = json.loads(text)["selected_memories"]
    if not isinstance(selected, list):
        raise ValueError("selected_memories is not a list")
    return [path for path in selected if isinstance(path, str)]


_model_threads = ThreadPoolExecutor(MODEL_THREADS, thread_name_prefix="memhub-recall-model")


@dataclass
class _Question:
    """One request to the model in flight, shared by every recall that asks it meanwhile."""

    request: ModelRequest
    answer: Future = field(default_factory=Future)
    lock: threading.Lock = field(default_factory=threading.Lock)
    abandoned: bool = False  # a caller stopped waiting: the model's thread keeps the answer
    kept: bool = False  # the answer came from the cache


_asking: dict[str, _Question] = {}
_asking_lock = threading.Lock()


def _keep(request: ModelRequest, paths: list[str]) -> None:
    try:
        cache.set(request.key, paths, SELECTION_TTL_S)
    except Exception:  # the answer still serves whoever is waiting for it
        log.warning("recall: the model's picks could not be kept", exc_info=True)


def _ask_in_thread(question: _Question) -> None:
    """In a model thread: ask, hand the answer to the waiting recalls, and when one of them
    gave up waiting, keep the answer for the next (otherwise the recall that got it does)."""
    try:
        try:
            paths = ask_model(question.request)
        except Exception as exc:
            question.answer.set_exception(exc)
            return
        with question.lock:
            question.answer.set_result(paths)
            keep = question.abandoned
        if keep:
            _keep(question.request, paths)
    finally:
        with _asking_lock:
            _asking.pop(question.request.key, None)
        connections.close_all()  # this thread's own connections (the cache table)


def _question(request: ModelRequest) -> _Question:
    """The question for `request`: answered already (kept from an identical earlier request),
    in flight, or asked now in a model thread."""
    kept = cache.get(request.key)
    if isinstance(kept, list):
        question = _Question(request, kept=True)
        question.answer.set_result(kept)
        return question
    with _asking_lock:
        question = _asking.get(request.key)
        if question is None:
            question = _asking[request.key] = _Question(request)
            _model_threads.submit(_ask_in_thread, question)
    return question


def model_picks(request: ModelRequest, wait: float | None) -> list[str]:
    """The model's picks for `request`, waiting at most `wait` seconds (None: as long as it
    takes). Raises FutureTimeout when it has not answered by then (it goes on, and its answer
    is kept for the next identical request), or the model's own error."""
    question = _question(request)
    try:
        paths = question.answer.result(timeout=wait)
    except FutureTimeout:
        with question.lock:
            if not question.answer.done():
                question.abandoned = True
                raise
        paths = question.answer.result()
    if not (question.kept or question.abandoned):
        _keep(request, paths)  # by the recall that got it, on its own connection
    return paths


def _by_path(candidates: list[Candidate], paths: list[str], limit: int) -> list[Candidate]:
    """The candidates the model named, best first; names it invented and repeats are dropped
    (docs/design.md §7)."""
    by_path = {c.shown_path: c for c in candidates}
    by_path.update((c.manifest_name, c) for c in candidates)  # as the manifest names them
    picked: list[Candidate] = []
    for path in paths:
        if path in by_path and by_path[path] not in picked:
            picked.append(by_path[path])
    return picked[:limit]


def session_key(user_pk: int, session_id: str) -> str:
    """Where a session's state is shared. Hashed: a session id is the client's text, and cache
    keys must be short and plain."""
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"memhub:recall-session:{user_pk}:{digest}"


@dataclass(frozen=True)
class SessionState:
    """What one session has been shown so far, kept in the shared cache so that every worker
    holds the session to one budget and never shows it the same memory twice."""

    used_bytes: int = 0
    paths: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Shown:
    """A picked memory, read and cut to the per-memory budget."""

    candidate: Candidate
    text: str
    truncated: bool

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def _session(user, session_id: str | None) -> Seen:
    if not session_id:
        return Seen(SessionState())
    key = session_key(user.pk, session_id)
    seen = read_ahead(key)  # read with the request's warm stamp (memapp.api.plain_views)
    if seen is None:
        return read(key, SessionState())
    return seen if seen.value is not None else Seen(SessionState(), seen.raw)


def _within_session_budget(
    user, session_id: str, shown: list[Shown], budget: int, seen: Seen
) -> list[Shown]:
    """The memories that still fit the session's budget, in order (the first that does not fit
    ends the list); what they use is added to the session's state in one update, which starts
    from the state `seen` at the start of the recall."""

    def take(state: SessionState | None) -> tuple[SessionState, list[Shown]]:
        state = state or SessionState()
        kept, used = [], state.used_bytes
        for item in shown:
            if item.candidate.shown_path in state.paths:
                continue  # another worker showed it meanwhile
            if used + item.size > budget:
                break
            used += item.size
            kept.append(item)
        paths = state.paths | {item.candidate.shown_path for item in kept}
        return SessionState(used, frozenset(paths)), kept

    return update(session_key(user.pk, session_id), take, SESSION_TTL_S, seen=seen)


def mark_surfaced(user, session_id: str, paths: list[str]) -> int:
    """Count `paths` as shown to the session (the agent read them itself), so recall does not
    offer them again; returns how many were new to it."""

    def add(state: SessionState | None) -> tuple[SessionState, int]:
        state = state or SessionState()
        new = set(paths) - state.paths
        return SessionState(state.used_bytes, state.paths | new), len(new)

    return update(session_key(user.pk, session_id), add, SESSION_TTL_S)


def _select(
    candidates: list[Candidate],
    query: str,
    recent_tools,
    limit: int,
    model: str,
    wait: float | None,
    outcome: RecallOutcome,
) -> list[Candidate] | None:
    """The model's picks, or None (with the reason in `outcome`) when the offline ranker must
    pick: the model failed, or had not answered within `wait` seconds (None: as long as it
    takes), in which case it goes on in its thread and its answer is kept for next time."""
    request = model_request(candidates, query, recent_tools, limit, model)
    try:
        paths = model_picks(request, wait)
    except FutureTimeout:
        outcome.fallback_reason = (
            f"pending: the model had not answered within {max(wait or 0, 0):.2f} s; "
            "its picks are kept for the next recall of this query"
        )
        log.info("recall: %s", outcome.fallback_reason)
        return None
    except Exception as exc:  # any failure of the model falls back to offline recall
        outcome.fallback_reason = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("recall selector failed, using offline recall: %s", outcome.fallback_reason)
        return None
    outcome.selector = "llm"
    return _by_path(candidates, paths, limit)


def recall_for(
    user,
    private: Store,
    query: str,
    *,
    recent_tools: tuple[str, ...] = (),
    already_surfaced: tuple[str, ...] = (),
    scope: str = "both",
    memory_dir: str | None = None,
    session_id: str | None = None,
    now_ms: int | None = None,
    wait_ms: int | None = None,
    project=None,
    preview: bool = False,
) -> RecallOutcome:
    """At most `recall_max` memories that fit `query`, from the user's private store of a project
    and/or its team store (or from an agent's own store), each cut to the surfacing budget.

    `wait_ms` is how long the caller can wait for the answer; the model gets what is left of
    it once the candidates are ready (without it, the model gets as long as it takes).
    `project` is the project asked about, for its flags, when `private` belongs to none (an
    agent's user-scope memory). A `preview` (the "What would my agent recall?" page) answers
    the same but is no recall: no session budget is used, no event recorded, no memory counted
    as recalled."""
    started = time.monotonic()
    project = project or private.project
    flags = get_flags(project)
    if not (flags["recall"] and flags["auto_memory"]):  # memory off means off
        return RecallOutcome(selector="disabled")
    session_id = None if preview else session_id
    if session_id and flags["daily_log_mode"] and flags["consolidation"]:
        # Daily-log mode recalls nothing per prompt (its prompt says so): the logs are read
        # by consolidation, and the agent reads its memory itself.
        return RecallOutcome(selector="disabled", fallback_reason="daily_log_mode")
    limit, max_files = flags["recall_max"], flags["scan_max_files"]
    indexes = _indexes(_stores(user, private, scope, flags), max_files)
    session = _session(user, session_id)
    surfaced_paths = set(already_surfaced) | session.value.paths
    surfaced = _surfaced(indexes, surfaced_paths, memory_dir)
    # What team sync keeps back (a secret) goes to no teammate's agent: as if already shown.
    surfaced |= {(store.pk, key) for store, _ in indexes for key in withheld(store)}
    outcome = RecallOutcome(candidates=_eligible_count(indexes, surfaced, max_files))

    def candidate(store: Store, header: MemoryHeader) -> Candidate:
        return Candidate(store, header, _shown(store, header.path, memory_dir), store.kind)

    picked: list[Candidate] | None = None
    if settings.ANTHROPIC_API_KEY and not flags["recall_offline_only"] and outcome.candidates:
        wait = None if wait_ms is None else wait_ms / 1000 - (time.monotonic() - started)
        eligible = _eligible(indexes, surfaced, max_files)
        candidates = [candidate(store, header) for store, header in eligible]
        picked = _select(
            candidates, query, recent_tools, limit, flags["recall_model"], wait, outcome
        )
    if picked is None:
        # One store's index holds only its newest files, none surfaced is picked: all eligible.
        allowed = None
        if len(indexes) > 1:
            allowed = {(st.pk, h.path) for st, h in _eligible(indexes, surfaced, max_files)}
        picked = [
            candidate(store, header)
            for store, header in select_offline(indexes, query, recent_tools, surfaced, limit)
            if allowed is None or (store.pk, header.path) in allowed
        ]
    shown = _read(picked, flags["surface_max_bytes"])
    if session_id and shown:
        shown = _within_session_budget(
            user, session_id, shown, flags["surface_session_bytes"], session
        )
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    outcome.memories = [_answer(item, query, outcome.selector, now_ms) for item in shown]
    outcome.rendered = render_recalled(
        [
            RecalledMemory(i.candidate.shown_path, i.candidate.header.mtime_ms, i.text)
            for i in shown
        ],
        now_ms,
    )
    if preview:
        return outcome
    count_recalled((item.candidate.store.pk, item.candidate.header.path) for item in shown)
    record_event_later(
        "recall",
        project=project,
        user=user,
        candidates=outcome.candidates,
        selected=len(outcome.memories),
        ages=[m["age_days"] for m in outcome.memories],
        selector=outcome.selector,
        error=outcome.fallback_reason,
    )
    return outcome


def _read(picked: list[Candidate], max_bytes: int) -> list[Shown]:
    """Each picked memory's text, cut to `max_bytes`, read by the stores' one reader (atime
    kept); a file gone since the scan is skipped."""
    shown = []
    for candidate in picked:
        try:
            content = read_file(f"{candidate.store.path}/{candidate.header.path}")
        except OSError:
            continue
        text, truncated = truncate_for_surfacing(
            content.decode("utf-8", "replace"), candidate.shown_path, max_bytes=max_bytes
        )
        shown.append(Shown(candidate, text, truncated))
    return shown


def _answer(item: Shown, query: str, selector: str, now_ms: int) -> dict:
    """One recalled memory as the API returns it."""
    header = item.candidate.header
    return {
        "path": item.candidate.shown_path,
        "scope": item.candidate.scope,
        "type": header.type,
        "name": header.name,
        "description": header.description,
        "mtime_ms": header.mtime_ms,
        "age": memory_age(header.mtime_ms, now_ms),
        "age_days": memory_age_days(header.mtime_ms, now_ms),
        "header": memory_header(item.candidate.shown_path, header.mtime_ms, now_ms),
        "content": item.text,
        "truncated": item.truncated,
        "reason": "chosen by the model" if selector == "llm" else select_reason(header, query),
    }
