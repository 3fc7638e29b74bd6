"""Events a page at a time by their place in time (docs/design.md §12.1): "Older" and "Newer"
carry the (created_at, id) of the last or first event shown (or of the last one looked at), so
a page reads the newest events from the index on `created_at` and stops, where page numbers
counted every matching event first.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db.models import Q
from django.http import QueryDict

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass
class EventPage:
    object_list: list
    newer: str | None  # the query string of the newer page, if there is one
    older: str | None


def _cursor(at) -> str:
    """`at`: an event, or a (created_at, id) pair."""
    moment, pk = (at.created_at, at.pk) if hasattr(at, "pk") else at
    micros = (moment - _EPOCH) // datetime.timedelta(microseconds=1)
    return f"{micros}-{pk}"


def _parse(raw: str | None) -> tuple[datetime.datetime, int] | None:
    micros, _, pk = (raw or "").partition("-")
    if not (micros.isdigit() and pk.isdigit()):
        return None
    return _EPOCH + datetime.timedelta(microseconds=int(micros)), int(pk)


def _link(query: QueryDict, direction: str, at) -> str:
    query = query.copy()
    for name in ("older", "newer", "page"):
        query.pop(name, None)
    query[direction] = _cursor(at)
    return query.urlencode()


# A page looks through at most PROBES × WINDOW events, newest first, for the ones the person may
# see: reading the visible events straight away lets the databases gather every one of them
# through the indexes of the visibility's branches and sort them all (docs/scaling.md). The
# first window holds four pages' worth, each next one four times as many, up to WINDOW: most
# pages find what they show in the first, and each event looked at costs a row and an id.
WINDOW = 2000
PROBES = 5


def _window(candidates, branches, bound: Q | None, newest_first: bool, limit: int):
    """The first `limit` (created_at, id) of `candidates`: of each of its `branches` (disjoint
    parts, each read in the order of an index), merged."""
    order = ("-created_at", "-id") if newest_first else ("created_at", "id")
    found: list[tuple] = []
    for part in branches or [candidates]:
        rows = part if bound is None else part.filter(bound)
        found += rows.order_by(*order).values_list("created_at", "id")[:limit]
    if branches:
        found.sort(reverse=newest_first)
    return found[:limit]


def _beyond(moment, pk, newest_first: bool) -> Q:
    if newest_first:
        return Q(created_at__lt=moment) | Q(created_at=moment, pk__lt=pk)
    return Q(created_at__gt=moment) | Q(created_at=moment, pk__gt=pk)


def _scan(candidates, branches, visible: Q, start, newest_first: bool, size: int):
    """Up to `size` + 1 visible events beyond `start` (newest first, or oldest first), and
    where the scan stopped if it gave up before finding them or the end (None: it did not)."""
    found: list = []
    bound = None if start is None else _beyond(*start, newest_first)
    limit, looked = min(WINDOW, 4 * (size + 1)), 0
    order = ("-created_at", "-id") if newest_first else ("created_at", "id")
    while looked < PROBES * WINDOW:
        window = _window(candidates, branches, bound, newest_first, limit)
        if not window:
            return found, None
        ids = [pk for _, pk in window]
        found += list(
            candidates.filter(visible, pk__in=ids).order_by(*order)[: size + 1 - len(found)]
        )
        if len(found) > size or len(window) < limit:
            return found, None
        looked += len(window)
        bound = _beyond(*window[-1], newest_first)
        limit = min(WINDOW, limit * 4)
    return found, window[-1]


def event_page(
    candidates, visible: Q, query: QueryDict, size: int, branches: list | None = None
) -> EventPage:
    """The page of the `candidates` (newest first) the person may see (`visible`) that
    `query`'s `older` or `newer` names, else the newest. `branches`, if given, split the
    candidates into disjoint parts an index each reads in order, where the whole would be
    gathered and sorted."""
    older, newer = _parse(query.get("older")), _parse(query.get("newer"))
    if newer is not None:
        rows, stopped = _scan(candidates, branches, visible, newer, False, size)
        shown = rows[:size][::-1]
        return EventPage(
            shown,
            _link(query, "newer", shown[0] if len(rows) > size else stopped)
            if shown and (len(rows) > size or stopped)
            else None,
            _link(query, "older", shown[-1]) if shown else _link(query, "older", newer),
        )
    rows, stopped = _scan(candidates, branches, visible, older, True, size)
    shown = rows[:size]
    if len(rows) > size:
        further = _link(query, "older", shown[-1])
    else:
        further = None if stopped is None else _link(query, "older", stopped)
    return EventPage(
        shown,
        _link(query, "newer", shown[0]) if shown and older is not None else None,
        further,
    )
