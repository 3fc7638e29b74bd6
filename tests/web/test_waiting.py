"""What waits for a person: badges in the navigation and cards on the home page, each
counting only what that person may see."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memapp.stores.models import Project, Store
from memapp.stores.waiting import register_waiting, waiting_for
from teamsync.models import BlockedFile, TeamConflict
from tests.web.memory_pages import text

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(stores, alice, bob):
    """Alice's team store, bob a member of its project."""
    stores.team.project.members.add(alice, bob)
    return stores.team


def badges(response) -> dict[str, str]:
    html = response.content.decode()
    found = re.findall(r'<a href="([^"]+)">[^<]*<span class="nav-badge">(\d+)<', html)
    return {href: count for href, count in found}


def test_nothing_waiting_shows_no_badge_and_no_card(client, team, alice):
    client.force_login(alice)
    response = client.get(reverse("home"))
    assert badges(response) == {}
    assert "Waiting for you" not in text(response)


def test_conflicts_and_blocked_files_are_counted_for_members(client, team, alice, bob, charlie):
    TeamConflict.objects.create(store=team, key="a.md", kind="edit", ours="1\n", theirs="2\n")
    TeamConflict.objects.create(
        store=team, key="b.md", kind="edit", ours="1\n", theirs="2\n", resolution="ours",
        resolved_at="2026-01-01T00:00Z",
    )  # fmt: skip
    BlockedFile.objects.create(store=team, key="c.md", reason="secret")
    client.force_login(bob)
    response = client.get(reverse("home"))
    assert badges(response) == {reverse("sync"): "2"}
    page = text(response)
    assert "Waiting for you 1 team sync conflicts 1 files kept back from team sync" in page
    assert 'href="/sync/" id="waiting-conflicts"' in response.content.decode()
    client.force_login(charlie)  # not a member
    assert badges(client.get(reverse("home"))) == {}


def test_a_kind_registered_by_another_app_appears_everywhere(client, stores, alice, monkeypatch):
    from memapp.stores import waiting

    monkeypatch.setattr(waiting, "_kinds", dict(waiting._kinds))  # the real kinds come back after
    register_waiting("reminders", "reminders to read", "events", lambda user: 3)
    client.force_login(alice)
    response = client.get(reverse("home"))
    assert "3 reminders to read" in text(response)
    assert [w.kind.key for w in waiting_for(alice)] == ["reminders"]


def test_a_pending_snapshot_update_is_counted_for_its_checkouts_owner(
    client, alice, bob, tmp_path, monkeypatch
):
    from snapshots.actions import do_register_checkout
    from tests.snapshots.conftest import LOCAL, SNAPSHOT, T1, T2, mark, write_files, write_snapshot

    base = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(base))
    monkeypatch.delenv("CLAUDE_CODE_REMOTE_MEMORY_DIR", raising=False)
    repo = tmp_path / "widgets"
    (repo / ".git").mkdir(parents=True)
    write_snapshot(repo, "reviewer", T2, SNAPSHOT)
    mark(write_files(base / "agent-memory" / "reviewer", LOCAL), T1)
    do_register_checkout(alice, repo)
    client.force_login(alice)
    assert badges(client.get(reverse("home"))) == {reverse("snapshot_list"): "1"}
    client.force_login(bob)
    assert badges(client.get(reverse("home"))) == {}
    assert Project.objects.exists() and Store.objects.exists()
