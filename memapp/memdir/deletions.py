"""When a sync deletes nothing without asking: the one rule of team sync and of memhub-agent's
private sync (docs/design.md §17, docs/design.md §18)."""

from __future__ import annotations

__all__ = ["FEW_DELETIONS", "too_many_deletions"]

# A sync that would delete more than this many files, or (two or more) over a quarter of
# those it holds, deletes none of them until a person says so: a directory moved, emptied
# or not mounted must not empty the store everywhere.
FEW_DELETIONS = 3


def too_many_deletions(count: int, total: int) -> bool:
    """Whether deleting `count` of `total` files needs a person's yes."""
    return count >= 2 and (count > FEW_DELETIONS or count * 4 > total)
