"""What every page's navigation needs: how much waits for the person, counted only when a
page shows it."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from memapp.stores.waiting import waiting_for


def _counts_by_page(user) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in waiting_for(user):
        counts[item.kind.url_name] = counts.get(item.kind.url_name, 0) + item.count
    return counts


def waiting(request: HttpRequest) -> dict:
    user = request.user
    return {"waiting_by_page": SimpleLazyObject(lambda: _counts_by_page(user))}
