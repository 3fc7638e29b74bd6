"""A team store's files as a member sees them (docs/design.md §6a, §17): hidden files are not
memories, so the store page neither lists nor counts them; files team sync keeps back are
listed on the Team sync page, each with why, and their own page says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from memapp.stores.models import Project, Store
from memapp.stores.projects import resolve_store
from teamsync.service import do_sync_team
from tests.browser.login import log_in
from tests.browser.screens import SCREENS, at_both_widths
from tests.teamsync.gitutil import make_bare, memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def team_store(tmp_path, settings, alice) -> Store:
    settings.MEMHUB_TEAM_REMOTE = str(make_bare(tmp_path / "team.git"))
    Project.objects.create(key="acme/app").members.add(alice)
    store = resolve_store(alice, "acme/app", "team")
    root = Path(store.path)
    (root / "reference_runbook.md").write_text(memory("Runbook", "Page the on-call.\n"))
    (root / ".hidden.md").write_text(memory("Hidden note", "Not a memory.\n"))
    (root / ".drafts").mkdir()
    (root / ".drafts" / "n.md").write_text(memory("Half-done draft", "Later.\n"))
    (root / "reference_dump.md").write_text(memory("Dump", "z" * 250_001))
    (root / "latin1.md").write_bytes("---\nname: Café\n---\n".encode("latin-1"))
    do_sync_team()
    return store


def test_a_member_sees_the_memories_and_why_some_are_kept_back(
    live_server, page, screenshot, team_store, alice
):
    log_in(page, live_server)
    for label, screen in SCREENS.items():
        page.set_viewport_size(screen)
        page.goto(f"{live_server.url}/stores/{team_store.pk}/")
        page.click("button:has-text('Rescan')")
        page.wait_for_load_state()
        assert "3 memories" in page.locator("main").inner_text()
        titles = page.locator("a.title").all_inner_texts()
        assert "Runbook" in titles
        assert "Hidden note" not in titles and "Half-done draft" not in titles
        screenshot(f"team-files-store-{label}")

        page.goto(f"{live_server.url}/sync/")
        blocked = page.locator("#blocked")
        assert "Blocked files (2)" in blocked.inner_text()
        rows = blocked.locator("tbody tr").all_inner_texts()
        assert any(
            "reference_dump.md" in r and "over the size cap (250,000 bytes)" in r for r in rows
        )
        assert any("latin1.md" in r and "not UTF-8 text" in r for r in rows)
        assert ".hidden.md" not in blocked.inner_text()
        screenshot(f"team-files-sync-{label}")


def test_the_page_of_a_memory_kept_back_says_why(live_server, page, team_store, alice):
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{team_store.pk}/")
    page.click("button:has-text('Rescan')")
    page.wait_for_load_state()
    page.goto(
        live_server.url
        + reverse("memory", kwargs={"store_id": team_store.pk, "path": "reference_dump.md"})
    )
    notice = page.locator("#kept-back").inner_text()
    assert "memhub gives it to no agent" in notice and "over the size cap" in notice
    at_both_widths(
        page, "team-files-kept-back", part="#kept-back", where="a memory team sync keeps back"
    )
