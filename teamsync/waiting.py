"""What team sync leaves waiting for a person: conflicts to settle and files kept back."""

from __future__ import annotations

from memapp.stores.models import Store
from teamsync.models import BlockedFile, TeamConflict


def _team_stores(user):
    return Store.objects.visible_to(user).filter(kind=Store.Kind.TEAM).values("pk")


def open_conflicts(user) -> int:
    return TeamConflict.objects.filter(
        store__in=_team_stores(user), resolved_at__isnull=True
    ).count()


def blocked_files(user) -> int:
    return BlockedFile.objects.filter(store__in=_team_stores(user)).count()
