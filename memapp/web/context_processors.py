"""What every page's navigation shows."""

from __future__ import annotations

from django.http import HttpRequest

from memapp.lifecycle.proposals import pending_count


def navigation(request: HttpRequest) -> dict:
    """How many proposals wait for the signed-in person (the count beside "Proposals")."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"pending_proposals": pending_count(user)}
