"""Searching memories (docs/design.md §24): the store page, the Search page and the memory half
of past-context search. Ranked by the one rule of `memapp.memdir.ranking` from each store's
index (every file, kept while the store's mirror is unchanged), weak matches included, then
whatever else holds the query as typed (part of a word, a path), newest first.

A search costs the same few queries whatever the store's size: the ranked part comes from the
index and the plain-text part from the files' text kept beside it (read again only for the
files a rescan changed), not from the rows; the rows are read for the filters when some are
set (one query) and for the page shown (one).

NumPy is imported by a search when it runs, not with this module: the web's views import it,
and so every `manage.py` process would pay NumPy's 0.1 s import.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memapp.memdir.offline_recall import RecallIndex
from memapp.memdir.ranking import MAX_QUERY
from memapp.stores.kept_texts import KeptTexts
from memapp.stores.models import MemoryFile, Store
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


_positions: dict[int, tuple[RecallIndex, dict[str, int]]] = {}  # store id -> index, path -> i


def _positions_in(store: Store, index: RecallIndex) -> dict[str, int]:
    """Where each path of the store is in its index (kept with the index)."""
    with _lock:
        kept = _positions.get(store.pk)
    if kept is not None and kept[0] is index:
        return kept[1]
    positions = {header.path: i for i, header in enumerate(index.headers)}
    with _lock:
        _positions[store.pk] = (index, positions)
    return positions


@dataclass
class _Ranked:
    """One store's matches by the ranking rule: scores by position in its index, 0.0 for a
    file that does not match."""

    store: Store
    index: RecallIndex
    query: str
    scores: array[float]
    count: int = field(init=False)  # of matches

    def __post_init__(self) -> None:
        import numpy as np

        self.count = int(np.count_nonzero(np.frombuffer(self.scores)))

    def keep(self, allowed: set[Key]) -> None:
        """Only the matches `allowed` holds (the filters')."""
        pk = self.store.pk
        self.scores = array(
            "d",
            (
                s if s and (pk, h.path) in allowed else 0.0
                for s, h in zip(self.scores, self.index.headers, strict=True)
            ),
        )
        self.__post_init__()

    def best(self, stop: int) -> list[tuple[float, int]]:
        """The `stop` best matches as (score, -position), best first, as `heapq.nlargest`
        gives them (equal scores: the first in the index first). NumPy puts in order only
        those at or above the `stop`-th best score: a broad query matches most of a large
        store, and comparing each in Python was a sixth of a search."""
        import numpy as np

        if stop <= 0:
            return []
        scores = np.frombuffer(self.scores)
        positions = np.flatnonzero(scores)
        if len(positions) > stop:
            matched = scores[positions]
            bar = np.partition(matched, len(matched) - stop)[len(matched) - stop]
            positions = positions[matched >= bar]
        best = positions[np.lexsort((positions, -scores[positions]))[:stop]]
        return [(self.scores[i], -i) for i in best.tolist()]

    def in_dict_order(self) -> list[int]:
        """The matches in the order `RecallIndex.scored` lists them, which the other sorts'
        ties keep."""
        return [i for i in self.index.scored(self.query) if self.scores[i]]

    def key(self, i: int) -> Key:
        return (self.store.pk, self.index.headers[i].path)

    def row(self, i: int) -> tuple[Key, int, str, str]:
        """The file at `i` as the other sorts order it: (key, mtime, name, type)."""
        h = self.index.headers[i]
        return ((self.store.pk, h.path), h.mtime_ms, h.name or "", h.type or "")


def _ranked(stores: Iterable[Store], query: str) -> list[_Ranked]:
    rankings = []
    for store in stores:
        index = store_search_index(store)
        rankings.append(_Ranked(store, index, query, index.scored_list(query)))
    return rankings


class Found(Sequence):
    """The matches in the Search page's order, a page's rows read when it is shown (for a
    Paginator): ranked ones best first, only as many put in order as the pages shown need
    (a broad query matches most of a large store), then plain-text ones newest first."""

    def __init__(
        self, ranked: list[_Ranked], plain: Sequence[Key], stores: dict[int, Store]
    ) -> None:
        self.ranked, self.plain, self.stores = ranked, plain, stores
        self._count = sum(r.count for r in ranked)
        self._best: list[Key] = []

    def __len__(self) -> int:
        return self._count + len(self.plain)

    def score(self, key: Key) -> float:
        """The ranking's score of a match, 0 for a plain-text one."""
        for r in self.ranked:
            if r.store.pk == key[0]:
                i = _positions_in(r.store, r.index).get(key[1])
                return r.scores[i] if i is not None else 0.0
        return 0.0

    def keys(self, stop: int) -> list[Key]:
        """The first `stop` matches."""
        if len(self._best) < min(stop, self._count):
            # Equal scores: the newer memory (first in its index) first, as recall orders them.
            # Each store's best `stop`, then the best of those.
            every = [(score, i, n) for n, r in enumerate(self.ranked) for score, i in r.best(stop)]
            self._best = [self.ranked[n].key(-i) for _, i, n in heapq.nlargest(stop, every)]
        best = self._best[:stop]
        return best + self.plain[: max(0, stop - len(best))]

    def __getitem__(self, item):
        if isinstance(item, int):
            return self[item : item + 1][0]
        start, stop, _ = item.indices(len(self))
        return _rows(self.keys(stop)[start:stop], self.stores)


def _rows(keys: list[Key], stores: dict[int, Store]) -> list[MemoryFile]:
    """The mirror rows of `keys`, in that order (one query), each with its store from
    `stores` when those hold their project already (the store page's), else read with it."""
    ids = {store for store, _ in keys}
    given = all(
        i in stores and (stores[i].project_id is None or Store.project.is_cached(stores[i]))
        for i in ids
    )
    rows = MemoryFile.objects.order_by().filter(
        store_id__in=ids, path__in={path for _, path in keys}
    )
    by_key = {}
    for row in rows if given else rows.select_related("store__project"):
        if given:
            row.store = stores[row.store_id]
        by_key[(row.store_id, row.path)] = row
    return [by_key[key] for key in keys if key in by_key]


_SORTS = {  # over (key, mtime, name, type), as the database orders the other sorts
    "newest": lambda row: (-row[1], row[0][1]),
    "name": lambda row: (row[2], row[0][1]),
    "type": lambda row: (row[3], -row[1]),
}


def _sorted(ranked: list[_Ranked], plain, sort, stores: dict[int, Store]) -> Found:
    """Every match ordered by another sort than best match."""
    rows = [r.row(i) for r in ranked for i in r.in_dict_order()] + plain
    rows.sort(key=sort)
    return Found([], [key for key, *_ in rows], stores)


_kept: dict[int, KeptTexts] = {}  # store id -> its files' texts, in step with its index


def _texts_in(store: Store, index: RecallIndex) -> tuple[tuple[str, ...], KeptTexts | None]:
    """Each file's name, description, body and path, lower-cased and joined by NULs, in the
    order of the store's index and kept with it (and the words they hold), so the plain-text
    match reads no row: after a rescan only the files whose stamp the kept texts lack are read
    (one query). None for the words when the texts are not those kept."""
    with _lock:
        kept = _kept.setdefault(store.pk, KeptTexts())
    key, texts = kept.view
    if key is index.key:
        return texts, kept
    wanted = kept.missing(index.key)
    rows = store.files.order_by()
    rows = rows.filter(path__in=[stamp[0] for stamp in wanted]) if len(wanted) <= 500 else rows
    fields = ("path", "mtime_ms", "size", "name", "description", "body")
    new = {}
    for path, mtime, size, *text in rows.values_list(*fields).iterator(chunk_size=2000):
        new[(path, mtime, size)] = "\0".join((*text, path)).lower()
    if (followed := kept.follow(index.key, new)) is not None:
        return followed, kept
    # A file rescanned since the index was built has a stamp the index lacks: its path only,
    # for this search (the next one has the next index).
    return tuple(new.get(s) or kept.text(s) or s[0].lower() for s in index.key), None


_orders: dict[int, tuple[RecallIndex, bool]] = {}  # store id -> index, newest first by path


def _newest_first(store: Store, index: RecallIndex) -> bool:
    """Whether the index's order is (newest, then path as Python compares it), as the plain
    matches are listed: the database's collation of paths may differ (kept with the index)."""
    with _lock:
        kept = _orders.get(store.pk)
    if kept is not None and kept[0] is index:
        return kept[1]
    keys = [(-h.mtime_ms, h.path) for h in index.headers]
    ordered = all(a <= b for a, b in itertools.pairwise(keys))
    with _lock:
        _orders[store.pk] = (index, ordered)
    return ordered


class _Plain(Sequence):
    """The plain-text matches of each store (positions in its index, newest first), their keys
    made only for as many as are shown."""

    def __init__(self, found: list[tuple[_Ranked, list[int]]]) -> None:
        self.found = found
        self._count = sum(len(positions) for _, positions in found)

    def __len__(self) -> int:
        return self._count

    def _keys(self, stop: int) -> list[Key]:
        if len(self.found) == 1:
            r, positions = self.found[0]
            return [r.key(i) for i in positions[:stop]]

        def ordered(n: int, r: _Ranked, positions: list[int]):
            return (
                (-r.index.headers[i].mtime_ms, r.index.headers[i].path, n, i) for i in positions
            )

        merged = heapq.merge(*(ordered(n, *found) for n, found in enumerate(self.found)))
        return [self.found[n][0].key(i) for _, _, n, i in itertools.islice(merged, stop)]

    def __getitem__(self, item):
        if isinstance(item, int):
            return self[item : item + 1][0]
        start, stop, _ = item.indices(len(self))
        return self._keys(stop)[start:stop]

    def rows(self) -> list[tuple]:
        """Every match as (key, mtime, name, type)."""
        return [r.row(i) for r, positions in self.found for i in positions]


def _plain(ranked: list[_Ranked], query: str, allowed: set[Key] | None) -> _Plain:
    """What the ranking left out that holds `query` as typed (any case) in its name,
    description, body or path, newest first; `allowed` (the filters' matches) when filters
    are set."""
    import numpy as np

    needle = query.lower()
    if "\0" in needle:
        return _Plain([])  # no field holds a NUL (a form refuses them, and so does PostgreSQL)
    found = []
    for r in ranked:
        texts, kept = _texts_in(r.store, r.index)
        scores, headers = r.scores, r.index.headers
        # Only the texts the ranking left out are read (a broad query ranks most of a store),
        # and of those only the ones holding a word that holds the query, when that is fewer.
        unranked = len(scores) - r.count
        narrowed = kept.candidates(r.index.key, needle, unranked) if kept is not None else None
        if narrowed is None:
            positions = np.flatnonzero(np.frombuffer(scores) == 0.0).tolist()
        else:
            positions = (i for i in narrowed if not scores[i])
        matches = [i for i in positions if needle in texts[i]]
        if allowed is not None:
            matches = [i for i in matches if r.key(i) in allowed]
        if not _newest_first(r.store, r.index):
            matches.sort(key=lambda i: (-headers[i].mtime_ms, headers[i].path))
        found.append((r, matches))
    return _Plain(found)


def search_memories(stores, filters: dict, now_ms: int, stale_days: int):
    """The memories of `stores` (a queryset or a list), narrowed by the filters; with a query,
    ranked unless another sort was asked for. A sequence a Paginator can page through."""
    query = (filters.get("q") or "").strip()[:MAX_QUERY]
    rest = {**filters, "q": ""}
    narrowed = MemoryFile.objects.filter(store__in=stores).matching(rest, now_ms, stale_days)
    if not query:
        return narrowed.select_related("store__project")
    ranked = _ranked(list(stores), query)
    allowed = None
    if any(value for key, value in rest.items() if key != "sort"):
        # The filters are the database's to apply; the ranking stays the index's.
        allowed = set(narrowed.order_by().values_list("store_id", "path"))
        for r in ranked:
            r.keep(allowed)
    others = _plain(ranked, query, allowed)
    by_id = {r.store.pk: r.store for r in ranked}
    if sort := _SORTS.get(filters.get("sort") or ""):
        return _sorted(ranked, others.rows(), sort, by_id)
    return Found(ranked, others, by_id)


def best_memories(stores: list[Store], query: str, limit: int) -> list[tuple[MemoryFile, float]]:
    """The `limit` best memories of `stores` for `query` with their scores, in the Search page's
    order."""
    found = search_memories(stores, {"q": query}, 0, 0)
    assert isinstance(found, Found)  # a query, no other sort
    return [(row, found.score((row.store_id, row.path))) for row in found[:limit]]
