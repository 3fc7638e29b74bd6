"""What follows a change to a store: apps that act on changes register here once, at start.

The write functions (`memapp.stores.actions`) call :func:`announce_change` once a change is on
disk and mirrored, outside the store's lock. Team sync registers its commit here (in
`teamsync.apps`), so that a change a person makes becomes a commit by that person, while this
app, below team sync in the layers, knows nothing of git.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memapp.stores.models import Store

__all__ = ["ChangeListener", "announce_change", "follow_changes"]

# (store, the user who made the change or None, the keys it touched)
ChangeListener = Callable[[Store, Any, set[str]], object]

_listeners: list[ChangeListener] = []


def follow_changes(listener: ChangeListener) -> None:
    """Call `listener` after every change to a store (registering it twice has no effect)."""
    if listener not in _listeners:
        _listeners.append(listener)


def announce_change(store: Store, user: Any, keys: set[str]) -> None:
    """Tell every listener that `user` changed `keys` of `store`."""
    for listener in _listeners:
        listener(store, user, keys)
