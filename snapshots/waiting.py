"""Snapshot updates nobody has decided on yet, for the person whose checkouts they are in."""

from __future__ import annotations

from snapshots.models import Checkout
from snapshots.targets import targets_for_user


def pending_updates(user) -> int:
    if not Checkout.objects.filter(owner=user).exists():
        return 0  # one query for everyone without checkouts; the rest reads a few small files
    return sum(1 for target in targets_for_user(user) if target.pending)
