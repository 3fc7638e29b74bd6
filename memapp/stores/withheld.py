"""Files of a team store that memhub keeps from agents: what team sync keeps back (a secret, a
cap, not text), which therefore never reaches a teammate through git, is not given to an agent
by memhub either: not recalled, not read or listed through the files API or MCP, not found by
an agent's search (docs/design.md §10). People still see it on the web, to fix it. Team sync,
an app above this one, registers where it keeps them at start."""

from __future__ import annotations

from collections.abc import Callable

from memapp.stores.models import Store
from memapp.stores.warm import remembered

__all__ = ["kept_back_message", "register_withheld", "withheld"]

_sources: list[Callable[[Store], set[str]]] = []


def register_withheld(source: Callable[[Store], set[str]]) -> None:
    _sources.append(source)


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
