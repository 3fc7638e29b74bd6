"""A snapshot update nobody decided on yet waits for its owner's review, and only for them."""

from __future__ import annotations

import pytest

from memapp.stores.review import waiting_for_review
from snapshots.actions import do_decide_snapshot
from snapshots.targets import targets_for_user

pytestmark = pytest.mark.django_db


def snapshot_updates(user) -> int:
    return next(c.count for c in waiting_for_review(user) if c.kind == "snapshot_updates")


def test_a_pending_update_waits_until_someone_decides(checkout, alice, bob):
    assert snapshot_updates(alice) == 1
    assert snapshot_updates(bob) == 0
    [target] = [t for t in targets_for_user(alice) if t.pending]

    do_decide_snapshot(alice, target, "keep", target.review.fingerprint)

    assert snapshot_updates(alice) == 0
