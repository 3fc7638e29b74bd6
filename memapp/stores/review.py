"""What waits for a person's review, counted by the apps that keep it (docs/design.md §16).

Snapshot updates live in `snapshots`, team sync's conflicts and held-back files in `teamsync`,
both above this app in the layers, so each registers its counter here at start (in its
`apps.py`), as team sync registers its commit with `memapp.stores.changes`. A new kind of
review (the proposals of server-side memory work, say) is one more `count_for_review` call.
`waiting_for_review` is the one function every caller asks: the session-start answer an
agent's hook turns into a one-line notice, and the pages that show badges.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ReviewCount", "count_for_review", "review_notice", "waiting_for_review"]

Counter = Callable[[Any], int]  # user -> how many of this kind wait for that user


@dataclass(frozen=True)
class ReviewCount:
    kind: str  # stable, snake_case: `snapshot_updates`, `team_conflicts`, …
    one: str  # how a person reads one of them: "snapshot update"
    many: str  # … and several: "snapshot updates"
    count: int

    @property
    def words(self) -> str:
        return f"{self.count} {self.one if self.count == 1 else self.many}"


_counters: dict[str, tuple[str, str, Counter]] = {}


def count_for_review(kind: str, one: str, many: str, counter: Counter) -> None:
    """Register `counter` for `kind` (registering a kind again replaces its counter)."""
    _counters[kind] = (one, many, counter)


def waiting_for_review(user) -> list[ReviewCount]:
    """Every registered kind with its count for `user`, in the order they were registered."""
    return [
        ReviewCount(kind, one, many, counter(user))
        for kind, (one, many, counter) in _counters.items()
    ]


def review_notice(counts: list[ReviewCount], url: str) -> str:
    """One line for an agent to pass on, or "" when nothing waits: `memhub: 1 snapshot update
    and 2 team sync conflicts wait for your review at <url>`."""
    waiting = [count.words for count in counts if count.count]
    if not waiting:
        return ""
    listed = waiting[0] if len(waiting) == 1 else ", ".join(waiting[:-1]) + " and " + waiting[-1]
    verb = "waits" if sum(count.count for count in counts) == 1 else "wait"
    return f"memhub: {listed} {verb} for your review at {url}"
