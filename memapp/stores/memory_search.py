"""The review UI's search (docs/design.md §24): memories ranked as offline recall ranks them
(BM25F with stemming and synonyms, `memapp.memdir.offline_recall`), weak matches included,
then whatever else holds the query as plain text, newest first. Filters apply as before.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from django.db.models import Q

from memapp.memdir.offline_recall import RecallIndex
from memapp.stores.models import MemoryFile, MemoryFileQuerySet, Store
from memapp.stores.recall import index_from_mirror

_indexes: dict[int, RecallIndex] = {}
_checked: dict[int, object] = {}  # store id -> the scan time its index was last checked at
_lock = threading.Lock()


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


def substring_matches(memories: MemoryFileQuerySet, query: str) -> MemoryFileQuerySet:
    """The memories holding `query` as written (any case) in a field: part of a word, a path."""
    return memories.filter(
        Q(name__icontains=query)
        | Q(description__icontains=query)
        | Q(body__icontains=query)
        | Q(path__icontains=query)
    )


def ranked_ids(memories: MemoryFileQuerySet, query: str) -> list[int]:
    """The ids of `memories` (already filtered) that match `query`: ranked matches best first,
    then plain-text matches newest first."""
    rows = list(memories.values_list("pk", "store_id", "path"))
    if not rows:
        return []
    ids = {(store_id, path): pk for pk, store_id, path in rows}
    scored: list[tuple[float, int]] = []
    for store in Store.objects.filter(pk__in={store_id for _, store_id, _ in rows}):
        for header, score in store_search_index(store).rank(query):
            pk = ids.get((store.pk, header.path))
            if pk is not None:
                scored.append((score, pk))
    scored.sort(key=lambda row: -row[0])
    ranked = [pk for _, pk in scored]
    seen = set(ranked)
    plain = substring_matches(memories, query).order_by("-mtime_ms", "path")
    return ranked + [pk for pk in plain.values_list("pk", flat=True) if pk not in seen]


class InOrder(Sequence):
    """The rows of `ids` in that order, fetched a page at a time (for a Paginator)."""

    def __init__(self, ids: list[int], queryset) -> None:
        self.ids, self.queryset = ids, queryset

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, item):
        if isinstance(item, int):
            return self[item : item + 1][0]
        wanted = self.ids[item]
        rows = {row.pk: row for row in self.queryset.filter(pk__in=wanted)}
        return [rows[pk] for pk in wanted if pk in rows]


def search_memories(memories: MemoryFileQuerySet, filters: dict, now_ms: int, stale_days: int):
    """`memories` narrowed by the filters; with a query, ranked unless another sort was asked
    for. A sequence a Paginator can page through."""
    query = (filters.get("q") or "").strip()
    narrowed = memories.matching({**filters, "q": ""}, now_ms, stale_days)
    if not query:
        return narrowed
    ids = ranked_ids(narrowed, query)
    if filters.get("sort") in ("newest", "name", "type"):
        return narrowed.filter(pk__in=ids)
    return InOrder(ids, MemoryFile.objects.select_related("store__project"))
