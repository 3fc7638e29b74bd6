"""What team sync leaves for a person: open conflicts and files held back for secrets, counted
over the team stores the user is a member of (registered in `teamsync.apps`)."""

from __future__ import annotations

from memapp.stores.models import Store
from teamsync.models import BlockedFile, TeamConflict


def _team_stores(user):
    return Store.objects.visible_to(user).filter(kind=Store.Kind.TEAM)


def open_conflicts(user) -> int:
    return TeamConflict.objects.filter(
        store__in=_team_stores(user), resolved_at__isnull=True
    ).count()


def held_back_for_secrets(user) -> int:
    return BlockedFile.objects.filter(
        store__in=_team_stores(user), reason=BlockedFile.Reason.SECRET
    ).count()
