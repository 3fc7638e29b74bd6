"""Searching memories (docs/design.md §24): the store page, the Search page and the memory half
of past-context search. Ranked by the one rule of `memapp.memdir.ranking` from each store's
index (every file, kept while the store's mirror is unchanged), weak matches included, then
whatever else holds the query as typed (part of a word, a path), newest first.

A search costs the same few queries whatever the store's size: the ranked part comes from the
index, not from the rows; the rows are read for the plain-text matches (one query), for the
filters when some are set (one), and for the page shown (one).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterable, Sequence

from django.db.models import Q

from memapp.memdir.offline_recall import RecallIndex
from memapp.memdir.ranking import MAX_QUERY
from memapp.memdir.scan import MemoryHeader
from memapp.stores.models import MemoryFile, MemoryFileQuerySet, Store
from memapp.stores.recall import index_from_mirror

_indexes: dict[int, RecallIndex] = {}
_checked: dict[int, object] = {}  # store id -> the scan time its index was last checked at
_lock = threading.Lock()

Key = tuple[int, str]  # a memory as (store id, path)


def store_search_index(store: Store) -> RecallIndex:
    """The index of every file of the store, kept while its mirror rows are unchanged.

    Mirror rows change only in a rescan, and every rescan sets the store's scan time: while it
    is the one the index was checked at, the index is used without reading the rows again (at
    20,000 files, reading them is most of a search)."""
    with _lock:
        index = _indexes.get(store.pk)
        fresh = index is not None and _checked.get(store.pk) == store.scanned_at
    if fresh:
        return index
    index = index_from_mirror(store, None, _indexes, _lock)
    with _lock:
        _checked[store.pk] = store.scanned_at
    return index


Ranked = tuple[float, int, MemoryHeader]  # score, store id, header


def _ranked(stores: Iterable[Store], query: str) -> list[Ranked]:
    """The stores' memories matching `query` by the ranking rule, in no particular order."""
    return [
        (score, store.pk, header)
        for store in stores
        for header, score in store_search_index(store).rank(query)
    ]


def substring_matches(memories: MemoryFileQuerySet, query: str) -> MemoryFileQuerySet:
    """The memories holding `query` as written (any case) in a field: part of a word, a path."""
    return memories.filter(
        Q(name__icontains=query)
        | Q(description__icontains=query)
        | Q(body__icontains=query)
        | Q(path__icontains=query)
    )


def _score(row: Ranked) -> float:
    return row[0]


class Found(Sequence):
    """The matches in the Search page's order, a page's rows read when it is shown (for a
    Paginator): ranked ones best first, only as many put in order as the pages shown need
    (a broad query matches most of a large store), then plain-text ones newest first."""

    def __init__(self, ranked: list[Ranked], plain: list[Key]) -> None:
        self.ranked, self.plain = ranked, plain
        self._best: list[Key] = []

    def __len__(self) -> int:
        return len(self.ranked) + len(self.plain)

    def keys(self, stop: int) -> list[Key]:
        """The first `stop` matches."""
        if len(self._best) < min(stop, len(self.ranked)):
            best = heapq.nlargest(stop, self.ranked, key=_score)
            self._best = [(store, header.path) for _, store, header in best]
        best = self._best[:stop]
        return best + self.plain[: max(0, stop - len(best))]

    def __getitem__(self, item):
        if isinstance(item, int):
            return self[item : item + 1][0]
        start, stop, _ = item.indices(len(self))
        return _rows(self.keys(stop)[start:stop])


def _rows(keys: list[Key]) -> list[MemoryFile]:
    """The mirror rows of `keys`, in that order (one query)."""
    rows = MemoryFile.objects.select_related("store__project").filter(
        store_id__in={store for store, _ in keys}, path__in={path for _, path in keys}
    )
    by_key = {(row.store_id, row.path): row for row in rows}
    return [by_key[key] for key in keys if key in by_key]


_SORTS = {  # over (key, mtime, name, type), as the database orders the other sorts
    "newest": lambda row: (-row[1], row[0][1]),
    "name": lambda row: (row[2], row[0][1]),
    "type": lambda row: (row[3], -row[1]),
}


def _sorted(ranked: list[Ranked], plain, sort) -> Found:
    """Every match ordered by another sort than best match (key, mtime, name, type)."""
    rows = [((store, h.path), h.mtime_ms, h.name or "", h.type or "") for _, store, h in ranked] + [
        ((store, path), mtime, name, type_) for store, path, mtime, name, type_ in plain
    ]
    rows.sort(key=sort)
    return Found([], [key for key, *_ in rows])


def search_memories(stores, filters: dict, now_ms: int, stale_days: int):
    """The memories of `stores` (a queryset or a list), narrowed by the filters; with a query,
    ranked unless another sort was asked for. A sequence a Paginator can page through."""
    query = (filters.get("q") or "").strip()[:MAX_QUERY]
    rest = {**filters, "q": ""}
    narrowed = MemoryFile.objects.filter(store__in=stores).matching(rest, now_ms, stale_days)
    if not query:
        return narrowed.select_related("store__project")
    ranked = _ranked(list(stores), query)
    if any(value for key, value in rest.items() if key != "sort"):
        # The filters are the database's to apply; the ranking stays the index's.
        allowed = set(narrowed.values_list("store_id", "path"))
        ranked = [row for row in ranked if (row[1], row[2].path) in allowed]
    seen = {(store, header.path) for _, store, header in ranked}
    plain = substring_matches(narrowed, query).order_by("-mtime_ms", "path")
    if sort := _SORTS.get(filters.get("sort") or ""):
        fields = ("store_id", "path", "mtime_ms", "name", "type")
        others = [row for row in plain.values_list(*fields) if (row[0], row[1]) not in seen]
        return _sorted(ranked, others, sort)
    return Found(ranked, [key for key in plain.values_list("store_id", "path") if key not in seen])


def best_memories(stores: list[Store], query: str, limit: int) -> list[tuple[MemoryFile, float]]:
    """The `limit` best memories of `stores` for `query` with their scores, in the Search page's
    order."""
    found = search_memories(stores, {"q": query}, 0, 0)
    assert isinstance(found, Found)  # a query, no other sort
    rows = found[:limit]
    scores = {(store, header.path): score for score, store, header in found.ranked}
    return [(row, scores.get((row.store_id, row.path), 0.0)) for row in rows]
