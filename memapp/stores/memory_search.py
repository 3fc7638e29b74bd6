"""Searching memories (docs/design.md §24): the store page, the Search page and the memory half
of past-context search. Ranked by the one rule of `memapp.memdir.ranking` from each store's
index (every file, kept while the store's mirror is unchanged), weak matches included, then
whatever else holds the query as typed (part of a word, a path), newest first.

A search costs the same few queries whatever the store's size: the ranked part comes from the
index, not from the rows; the rows are read for the plain-text matches (one query), for the
filters when some are set (one), and for the page shown (one).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Q

from memapp.memdir.offline_recall import RecallIndex
from memapp.memdir.ranking import MAX_QUERY
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


@dataclass(frozen=True, slots=True)
class _Found:
    key: Key
    name: str
    type: str
    mtime_ms: int
    score: float  # 0 for a plain-text match


def _ranked(stores: Iterable[Store], query: str) -> list[_Found]:
    """The stores' memories matching `query` by the ranking rule, best first."""
    scored = []
    for store in stores:
        for header, score in store_search_index(store).rank(query):
            key = (store.pk, header.path)
            scored.append(_Found(key, header.name or "", header.type or "", header.mtime_ms, score))
    scored.sort(key=lambda found: -found.score)
    return scored


def substring_matches(memories: MemoryFileQuerySet, query: str) -> MemoryFileQuerySet:
    """The memories holding `query` as written (any case) in a field: part of a word, a path."""
    return memories.filter(
        Q(name__icontains=query)
        | Q(description__icontains=query)
        | Q(body__icontains=query)
        | Q(path__icontains=query)
    )


def _matches(stores: list[Store], narrowed: MemoryFileQuerySet, query: str, filtered: bool):
    """Ranked matches best first, then plain-text ones newest first; `narrowed`'s only."""
    ranked = _ranked(stores, query)
    if filtered:  # the filters are the database's to apply; the ranking stays the index's
        allowed = set(narrowed.values_list("store_id", "path"))
        ranked = [found for found in ranked if found.key in allowed]
    seen = {found.key for found in ranked}
    plain = substring_matches(narrowed, query).values_list(
        "store_id", "path", "name", "type", "mtime_ms"
    )
    return ranked + [
        _Found((store_id, path), name, type_, mtime, 0.0)
        for store_id, path, name, type_, mtime in plain.order_by("-mtime_ms", "path")
        if (store_id, path) not in seen
    ]


_SORTS = {
    "newest": lambda f: (-f.mtime_ms, f.key[1]),
    "name": lambda f: (f.name, f.key[1]),
    "type": lambda f: (f.type, -f.mtime_ms),
}


class InOrder(Sequence):
    """The memories of `keys` in that order, read a page at a time (for a Paginator)."""

    def __init__(self, keys: list[Key]) -> None:
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, item):
        if isinstance(item, int):
            return self[item : item + 1][0]
        wanted = self.keys[item]
        rows = MemoryFile.objects.select_related("store__project").filter(
            store_id__in={store for store, _ in wanted}, path__in={path for _, path in wanted}
        )
        by_key = {(row.store_id, row.path): row for row in rows}
        return [by_key[key] for key in wanted if key in by_key]


def search_memories(stores, filters: dict, now_ms: int, stale_days: int):
    """The memories of `stores` (a queryset or a list), narrowed by the filters; with a query,
    ranked unless another sort was asked for. A sequence a Paginator can page through."""
    query = (filters.get("q") or "").strip()[:MAX_QUERY]
    rest = {**filters, "q": ""}
    narrowed = MemoryFile.objects.filter(store__in=stores).matching(rest, now_ms, stale_days)
    if not query:
        return narrowed.select_related("store__project")
    stores = list(stores)
    filtered = any(value for key, value in rest.items() if key != "sort")
    found = _matches(stores, narrowed, query, filtered)
    if sort := _SORTS.get(filters.get("sort") or ""):
        found.sort(key=sort)
    return InOrder([f.key for f in found])


def best_memories(stores: list[Store], query: str, limit: int) -> list[tuple[MemoryFile, float]]:
    """The `limit` best memories of `stores` for `query` with their scores, in the Search page's
    order."""
    narrowed = MemoryFile.objects.filter(store__in=stores)
    found = _matches(stores, narrowed, query[:MAX_QUERY], filtered=False)[:limit]
    scores = {f.key: f.score for f in found}
    return [(row, scores[row.store_id, row.path]) for row in InOrder(list(scores))[:]]
