"""Files of a team store that memhub keeps from agents: what team sync keeps back (a secret, a
cap, not text), which therefore never reaches a teammate through git, is not given to an agent
by memhub either: not recalled, not read or listed through the files API or MCP, not found by
an agent's search (docs/design.md §10). People still see it on the web, to fix it. Team sync,
an app above this one, registers where it keeps them at start."""

from __future__ import annotations

from collections.abc import Callable

from memapp.memdir.store_files import is_index_key
from memapp.stores.models import Store
from memapp.stores.warm import remembered

__all__ = [
    "as_served",
    "flagged_index_message",
    "kept_back_message",
    "register_served_index",
    "register_withheld",
    "withheld",
]

_sources: list[Callable[[Store], set[str]]] = []
_index_sources: list[Callable[[Store, str, bytes], bytes | None]] = []


def register_withheld(source: Callable[[Store], set[str]]) -> None:
    _sources.append(source)


def register_served_index(source: Callable[[Store, str, bytes], bytes | None]) -> None:
    _index_sources.append(source)


def as_served(store: Store, key: str, data: bytes) -> bytes | None:
    """`data`, the bytes of the file `key` of `store`, as memhub gives them to an agent: a team
    store's index as teammates get it (without the entries of withheld files; None while a
    line of it holds a secret, docs/design.md §10), anything else as it is."""
    if store.kind != Store.Kind.TEAM or not is_index_key(key):
        return data
    for source in _index_sources:
        served = source(store, key, data)
        if served is None:
            return None
        data = served
    return data


def withheld(store: Store) -> frozenset[str]:
    """The keys of `store` kept from teammates; kept by a warm worker (a change of any source
    must replace the warm stamp: team sync's `BlockedFile` does, through its signals)."""
    if store.kind != Store.Kind.TEAM or not _sources:
        return frozenset()
    return remembered(
        ("withheld", store.pk), lambda: frozenset().union(*(source(store) for source in _sources))
    )


def kept_back_message(shown: str) -> str:
    """What an agent is told when it asks for a file of `withheld`, named as it named it."""
    return (
        f"Team sync keeps {shown} back from the team (a secret, a size or entry cap, or not "
        "text), so memhub gives it to no agent until a person fixes it: the Team sync page "
        "says why."
    )


def flagged_index_message(shown: str) -> str:
    """What an agent is told of a team index it cannot have whole (`as_served`)."""
    return (
        f"{shown} lists a file team sync keeps back (the Team sync page says why), or a line "
        "of it holds what the secret rules flag (the team store's page names the line), so "
        "memhub gives it to no agent whole until a person fixes it."
    )
