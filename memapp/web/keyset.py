"""Events a page at a time by their place in time (docs/design.md §12.1): "Older" and "Newer"
carry the (created_at, id) of the last or first event shown, so a page reads its events from
the index on `created_at` and stops, where page numbers counted every matching event first.
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


def _cursor(event) -> str:
    micros = (event.created_at - _EPOCH) // datetime.timedelta(microseconds=1)
    return f"{micros}-{event.pk}"


def _parse(raw: str | None) -> tuple[datetime.datetime, int] | None:
    micros, _, pk = (raw or "").partition("-")
    if not (micros.isdigit() and pk.isdigit()):
        return None
    return _EPOCH + datetime.timedelta(microseconds=int(micros)), int(pk)


def _link(query: QueryDict, direction: str, event) -> str:
    query = query.copy()
    for name in ("older", "newer", "page"):
        query.pop(name, None)
    query[direction] = _cursor(event)
    return query.urlencode()


def event_page(events, query: QueryDict, size: int) -> EventPage:
    """The page of `events` (newest first) that `query`'s `older` or `newer` names, else the
    newest; one query, of at most `size` + 1 rows."""
    older, newer = _parse(query.get("older")), _parse(query.get("newer"))
    if newer is not None:
        moment, pk = newer
        after = Q(created_at__gt=moment) | Q(created_at=moment, pk__gt=pk)
        rows = list(events.filter(after).order_by("created_at", "id")[: size + 1])
        shown = rows[:size][::-1]
        more_newer, more_older = len(rows) > size, True
    else:
        if older is not None:
            moment, pk = older
            events = events.filter(Q(created_at__lt=moment) | Q(created_at=moment, pk__lt=pk))
        rows = list(events.order_by("-created_at", "-id")[: size + 1])
        shown = rows[:size]
        more_newer, more_older = older is not None, len(rows) > size
    return EventPage(
        shown,
        _link(query, "newer", shown[0]) if shown and more_newer else None,
        _link(query, "older", shown[-1]) if shown and more_older else None,
    )
