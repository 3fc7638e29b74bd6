"""What waits for a person's review: a registry the apps that hold such things fill at start.

The navigation shows a badge and the home page a card for each kind with something waiting;
an agent's SessionStart hook passes on one line of it (`waiting_notice`, docs/design.md §16).
Apps above this one (team sync, snapshots, proposals) register their kind in their
`AppConfig.ready`, so this app knows none of them; adding a kind is one `register_waiting`
call with a function that counts it for a user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

__all__ = ["Waiting", "WaitingKind", "register_waiting", "waiting_for", "waiting_notice"]


@dataclass(frozen=True)
class WaitingKind:
    key: str  # stable name, e.g. "conflicts"
    label: str  # "team sync conflicts"
    url_name: str  # the page where they are settled
    count: Callable[[Any], int]  # how many wait for this user (only what the user may see)


@dataclass(frozen=True)
class Waiting:
    kind: WaitingKind
    count: int


_kinds: dict[str, WaitingKind] = {}


def register_waiting(key: str, label: str, url_name: str, count: Callable[[Any], int]) -> None:
    """Add (or replace) a kind of thing that waits for review."""
    _kinds[key] = WaitingKind(key, label, url_name, count)


def waiting_for(user) -> list[Waiting]:
    """Each registered kind with something waiting for `user`, in registration order."""
    if not user.is_authenticated:
        return []
    found = [Waiting(kind, kind.count(user)) for kind in _kinds.values()]
    return [item for item in found if item.count]


def waiting_notice(waiting: list[Waiting], site_url: str) -> str:
    """One line for an agent to pass on, or "" when nothing waits: `memhub: waiting for your
    review: proposals to review (2) at <site>/proposals/; team sync conflicts (1) at …`."""
    if not waiting:
        return ""
    site = site_url.rstrip("/")
    listed = "; ".join(
        f"{item.kind.label} ({item.count}) at {site}{reverse(item.kind.url_name)}"
        for item in waiting
    )
    return f"memhub: waiting for your review: {listed}"
