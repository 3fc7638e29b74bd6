"""What every page's navigation needs: how much waits for the person, counted only when a
page shows it."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from memapp.stores.waiting import Waiting, waiting_for


def waiting_of(request: HttpRequest) -> list[Waiting]:
    """`waiting_for` the request's person, counted once per request: a page that shows it
    (Home) and its navigation share one count."""
    if not hasattr(request, "memhub_waiting"):
        request.memhub_waiting = waiting_for(request.user)  # type: ignore[attr-defined]
    return request.memhub_waiting  # type: ignore[attr-defined]


def _counts_by_page(request: HttpRequest) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in waiting_of(request):
        counts[item.kind.url_name] = counts.get(item.kind.url_name, 0) + item.count
    return counts


def waiting(request: HttpRequest) -> dict:
    return {"waiting_by_page": SimpleLazyObject(lambda: _counts_by_page(request))}
