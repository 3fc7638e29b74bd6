"""Home and Events tell a member what team sync did, in sentences (docs/design.md §12, §22):
the memories a teammate's deletion moved to the Trash, named, with undo; routine background
events folded into one line. At desktop and phone widths, axe clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.stores.events import record_event
from memapp.stores.models import Project, Store
from memapp.stores.projects import resolve_store
from teamsync.service import do_sync_team
from tests.browser.accessibility import check_accessibility
from tests.browser.login import log_in
from tests.browser.screens import SCREENS
from tests.teamsync.gitutil import Member, make_bare
from tests.teamsync.test_service import save

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SENTENCE = "Team sync moved 2 memories to the Trash in acme/app: Code owners and On-call rota"


@pytest.fixture
def team_store(tmp_path, settings, alice) -> Store:
    """Dora deleted two of the team's ten memories; memhub's pull moved them to the Trash."""
    remote = make_bare(tmp_path / "team.git")
    settings.MEMHUB_TEAM_REMOTE = str(remote)
    Project.objects.create(key="acme/app").members.add(alice)
    store = resolve_store(alice, "acme/app", "team")
    owners = save(store, alice, "Code owners")
    rota = save(store, alice, "On-call rota")
    for name in ("Deploys", "Pager", "Runbooks", "Oncall", "Staging", "Releases", "Tracing"):
        save(store, alice, name)  # two of ten deleted is no mass deletion (docs/design.md §17)
    do_sync_team()
    dora = Member(tmp_path / "elsewhere", "dora", remote)
    dora.pull()
    dora.delete(owners.path)
    dora.delete(rota.path)
    dora.sync()
    do_sync_team()
    for _ in range(5):
        record_event("stores_discovered", found=3, removed=0, duration_ms=4)
    return store


def test_home_and_events_say_what_team_sync_did_and_undo_it(
    live_server, page, screenshot, team_store, alice
):
    log_in(page, live_server)
    for label, screen in SCREENS.items():
        page.set_viewport_size(screen)
        page.goto(f"{live_server.url}/")
        happened = page.locator("#happened")
        assert SENTENCE in happened.inner_text()
        assert happened.get_by_role("button", name="Restore Code owners").is_visible()
        check_accessibility(page, f"home {label}")
        screenshot(f"told-home-{label}")

        page.goto(f"{live_server.url}/events/")
        main = page.locator("main").inner_text()
        assert SENTENCE in main
        assert "Discovery found 3 memory directories (5 times)" in main
        assert "stores_discovered" not in main and "True" not in main
        check_accessibility(page, f"events {label}")
        screenshot(f"told-events-{label}")

    page.goto(f"{live_server.url}/")
    page.locator("#happened").get_by_role("button", name="Restore Code owners").click()
    page.wait_for_load_state()
    assert "Restored" in page.locator("main").inner_text()
    assert any(p.name.endswith("code_owners.md") for p in Path(team_store.path).iterdir())
    page.goto(f"{live_server.url}/")
    assert page.locator("#happened").get_by_role("button", name="Undo").is_visible()
