"""The dashboard, the events page and the Settings page in Debian's chromium, with a month of
real-looking activity: memories of many ages, a nearly full index, recalls, syncs."""

from __future__ import annotations

import datetime
import os
import random
import time
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memapp.stores.event_totals import rebuild_event_totals
from memapp.stores.events import record_event
from memapp.stores.flags import set_flag
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event, Project
from memapp.stores.projects import resolve_store
from tests.browser.login import log_in
from tests.browser.screens import DESKTOP
from tests.conftest import write_memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DAY = 86_400


def aged(store, filename: str, days: float) -> None:
    name = filename.removesuffix(".md").replace("_", " ")
    path = write_memory(Path(store.path), filename, name, f"About {name}", "project")
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))


def back(event: Event, days: int, hour: int) -> None:
    """Move an event back in time, behind the totals' back: `month` counts them again once."""
    moment = timezone.now() - datetime.timedelta(days=days)
    Event.objects.filter(pk=event.pk).update(created_at=moment.replace(hour=hour))


@pytest.fixture
def month(alice, bob):
    """Two projects' stores and thirty days of recall and sync events."""
    rng = random.Random(5)
    private = resolve_store(alice, "acme/app", "private")
    team = resolve_store(alice, "acme/app", "team")
    Project.objects.get(key="acme/app").members.add(bob)
    other = resolve_store(alice, "acme/billing", "private")
    for i in range(24):
        aged(private, f"note_{i:02}.md", rng.choice([0.2, 1.5, 4, 6, 12, 25, 40, 90]))
    for i in range(9):
        aged(team, f"team_{i}.md", rng.choice([0.5, 3, 10, 20]))
    for i in range(5):
        aged(other, f"billing_{i}.md", 45 + i)
    Path(private.path, "MEMORY.md").write_text("- [Note](note_00.md) — a hook\n" * 172)
    Path(team.path, "MEMORY.md").write_text("- [Team](team_0.md) — a hook\n" * 40)
    Path(other.path, "MEMORY.md").write_text("- [Bill](billing_0.md) — a hook\n" * 230)
    for store in (private, team, other):
        rescan_store(store)
    for day in range(30):
        for _ in range(rng.randint(2, 9)):
            selected = rng.choice([0, 1, 1, 2, 3, 5])
            event = record_event(
                "recall",
                project=private.project,
                user=alice,
                candidates=33,
                selected=selected,
                ages=[1] * selected,
                selector=rng.choice(["offline", "llm"]),
            )
            back(event, day, rng.randint(8, 18))
        for _ in range(rng.randint(0, 3)):
            event = record_event(
                "sync_push",
                success=rng.random() > 0.15,
                files_uploaded=2,
                conflict=False,
                conflict_retries=0,
                duration_ms=300,
                batches=1,
                error=None,
            )
            back(event, day, 12)
        for _ in range(rng.randint(3, 8)):
            changed = rng.random() < 0.3
            event = record_event(
                "sync_pull",
                success=True,
                files_written=2 if changed else 0,
                not_modified=not changed,
                duration_ms=80,
            )
            back(event, day, 13)
        if rng.random() < 0.15:
            back(record_event("conflict", store=team, path="team_1.md", reason="edit"), day, 14)
        if rng.random() < 0.1:
            event = record_event(
                "secret_skipped", store=team, file_count=rng.randint(1, 2), rule_ids=["github-pat"]
            )
            back(event, day, 15)
    rebuild_event_totals()  # the events moved: count them again, as the migration does
    set_flag("recall_max", 4, user=alice, note="recalls were noisy")
    return private


def test_the_dashboard_draws_a_month_of_memory_work(live_server, page, screenshot, month):
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.click("nav >> text=Dashboard")
    page.wait_for_url(f"{live_server.url}/dashboard/")
    assert page.locator(".tile .figure").first.inner_text() == "38"
    assert page.locator("#ages svg.chart").count() == 3
    assert page.locator("#caps svg.chart.meter.over").count() == 1  # billing: 230 of 200 lines
    assert page.locator("#caps svg.chart.meter.near").count() >= 1  # app: 172 of 200 lines
    assert page.locator("#recall svg.chart rect").count() > 30
    assert page.locator("#sync figure svg.chart").count() == 4
    box = page.locator("#recall svg.chart").bounding_box()
    assert box["width"] > 300 and box["height"] > 80
    screenshot("dashboard-01-month")

    page.click(".windows button:has-text('7 days')")
    page.wait_for_url("**/dashboard/?*days=7*")
    assert page.locator(".window-note").inner_text().startswith("Activity over the last 7 days")
    page.select_option("select[name=project]", label="acme/billing")
    # The 7-day link already carries an empty `project=`, so wait for the page, not the URL.
    expect(page.locator("h1")).to_have_text("Dashboard · acme/billing")
    expect(page.locator("#ages svg.chart")).to_have_count(1)
    screenshot("dashboard-02-billing-week")


def test_the_events_page_filters_as_you_choose(live_server, page, screenshot, month):
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.click("nav summary:has-text('More')")
    page.click("nav >> text=Events")
    page.wait_for_load_state()
    # A page of 50 events; runs of idle pulls are folded into one line each.
    lines = page.locator("table.events tbody tr")
    assert 1 < lines.count() < 50
    assert "times)" in page.locator("table.events").inner_text()
    screenshot("events-01-all")
    page.evaluate("window.__sameDocument = true")
    page.select_option("select[name=kind]", "secret_skipped")
    page.wait_for_url("**kind=secret_skipped*")
    rows = page.locator("table.events tbody tr")
    rows.first.wait_for()
    assert set(page.locator("table.events .kind").all_inner_texts()) == {"Kept back: a secret"}
    assert page.evaluate("window.__sameDocument === true")  # htmx swapped the list in place
    assert "what looks like a secret (github-pat)" in rows.first.inner_text()
    screenshot("events-02-secret-skipped")


def test_bob_sees_neither_settings_nor_alices_private_figures(live_server, page, month):
    log_in(page, live_server, "bob")
    assert page.locator("nav >> text=Settings").count() == 0
    page.goto(f"{live_server.url}/dashboard/")
    assert page.locator("#ages svg.chart").count() == 1  # the team store only
    assert page.locator("#recall .muted", has_text="No recalls yet.").count() == 1
    assert page.goto(f"{live_server.url}/settings/").status == 404


def test_the_settings_page_changes_a_flag_with_a_note(live_server, page, screenshot, month):
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.click("nav summary:has-text('More')")
    page.click("nav >> text=Settings")
    page.wait_for_load_state()
    dormant = page.locator("tr.dormant")
    assert dormant.count() == 1  # the frontmatter line count
    screenshot("settings-01-flags")
    page.click("a.flag-name:has-text('recall_max')")
    page.fill("#id_value", "0")
    page.click("button:has-text('Save')")
    assert page.locator(".errorlist").inner_text() == "recall_max must be at least 1, not 0"
    page.select_option("#id_scope", label="acme/app")
    page.fill("#id_value", "3")
    page.fill("#id_note", "acme agents drown in memories")
    page.click("button:has-text('Save')")
    assert page.locator(".message.success").inner_text() == "recall_max is now 3 for acme/app."
    history = page.locator("#history tbody tr").first.inner_text()
    assert "alice" in history and "4 → 3" in history and "acme agents drown" in history
    screenshot("settings-02-recall-max")
