"""What follows a change to a store: apps that act on changes register here once, at start.

The write functions (`memapp.stores.actions`) call :func:`announce_change` once a change is on
disk and mirrored, outside the store's lock. Team sync registers its commit here (in
`teamsync.apps`), so that a change a person makes becomes a commit by that person, while this
app, below team sync in the layers, knows nothing of git. The live mirror calls
:func:`announce_disk_change` for a store whose files it found changed behind memhub's back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memapp.stores.models import Store

__all__ = [
    "ChangeListener",
    "announce_change",
    "announce_disk_change",
    "follow_changes",
    "follow_disk_changes",
]

# (store, the user who made the change or None, the keys it touched)
ChangeListener = Callable[[Store, Any, set[str]], object]

_listeners: list[ChangeListener] = []
_disk_listeners: list[Callable[[Store], object]] = []


def follow_changes(listener: ChangeListener) -> None:
    """Call `listener` after every change to a store (registering it twice has no effect)."""
    if listener not in _listeners:
        _listeners.append(listener)


def announce_change(store: Store, user: Any, keys: set[str]) -> None:
    """Tell every listener that `user` changed `keys` of `store`."""
    for listener in _listeners:
        listener(store, user, keys)


def follow_disk_changes(listener: Callable[[Store], object]) -> None:
    """Call `listener` with each store whose files the live mirror found changed on disk."""
    if listener not in _disk_listeners:
        _disk_listeners.append(listener)


def announce_disk_change(store: Store) -> None:
    """Tell every listener that files of `store` changed behind memhub's back (an agent)."""
    for listener in _disk_listeners:
        listener(store)
