"""What waits for a person's review: one function counts it, each app registers its kind, and
one line says it (docs/design.md §16)."""

from __future__ import annotations

import pytest

from memapp.stores.projects import resolve_store
from memapp.stores.review import ReviewCount, review_notice, waiting_for_review
from teamsync.models import BlockedFile, TeamConflict

URL = "http://memhub.example/"


def counts(**numbers: int) -> list[ReviewCount]:
    words = {"conflicts": ("conflict", "conflicts"), "updates": ("update", "updates")}
    return [ReviewCount(kind, *words[kind], count) for kind, count in numbers.items()]


def test_nothing_waiting_says_nothing():
    assert review_notice(counts(conflicts=0, updates=0), URL) == ""


@pytest.mark.parametrize(
    ("numbers", "line"),
    [
        ({"conflicts": 1, "updates": 0}, "memhub: 1 conflict waits for your review at " + URL),
        ({"conflicts": 2, "updates": 0}, "memhub: 2 conflicts wait for your review at " + URL),
        (
            {"conflicts": 1, "updates": 3},
            "memhub: 1 conflict and 3 updates wait for your review at " + URL,
        ),
    ],
)
def test_one_line_says_what_waits(numbers, line):
    assert review_notice(counts(**numbers), URL) == line


@pytest.mark.django_db
def test_team_sync_counts_open_conflicts_and_files_held_for_secrets_of_the_users_teams(
    alice, bob, charlie
):
    resolve_store(alice, "acme/app", "private")  # the project, alice its first member
    team = resolve_store(alice, "acme/app", "team")
    team.project.members.add(bob)
    TeamConflict.objects.create(store=team, key="a.md", kind="edit")
    TeamConflict.objects.create(
        store=team, key="b.md", kind="edit", resolved_at="2026-01-01T00:00Z"
    )
    BlockedFile.objects.create(store=team, key="c.md", reason=BlockedFile.Reason.SECRET)
    BlockedFile.objects.create(store=team, key="d.md", reason=BlockedFile.Reason.CAPPED)

    def waiting(user) -> dict[str, int]:
        return {count.kind: count.count for count in waiting_for_review(user)}

    assert (
        waiting(alice)
        == waiting(bob)
        == {
            "team_conflicts": 1,
            "held_for_secrets": 1,
            "snapshot_updates": 0,
        }
    )
    assert waiting(charlie) == {"team_conflicts": 0, "held_for_secrets": 0, "snapshot_updates": 0}
