"""What waits for a person's review: a registry the apps that hold such things fill at start.

The navigation shows a badge and the home page a card for each kind with something waiting.
Apps above this one (team sync, snapshots, proposals) register their kind in their
`AppConfig.ready`, so this app knows none of them; adding a kind is one `register_waiting`
call with a function that counts it for a user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Waiting", "WaitingKind", "register_waiting", "waiting_for"]


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
