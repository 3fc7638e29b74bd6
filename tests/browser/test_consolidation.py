"""Consolidation in Debian's chromium, at desktop width and on a 390 px phone: an untidy store
(near-duplicates, a relative date, an index over both caps with doubled and dangling entries),
"Consolidate now" followed on the store page while the worker runs, the whole-store review
(meters, diffs, tick boxes, an edit of the index), one approval, and the store tidy after it;
a risky proposal needing its explicit tick, without JavaScript; the daily-log timeline.
Screenshots go to test-artifacts/, and axe checks every page.

The flows click through on a desktop, and each page on the way is shot at 390 px too; the
store page, the review and the risky proposal are axe-checked and measured there, and each
control the flow uses is tried there (Playwright's trial click: visible, enabled and not
covered). What a click then does is the same at any width, so it runs once."""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.lifecycle.models import Proposal
from memapp.memdir.daily_logs import append_to_log
from memapp.stores.mirror import rescan_store
from memapp.stores.projects import resolve_store
from tests.browser.accessibility import check_accessibility
from tests.browser.login import log_in
from tests.browser.screens import SCREENS, at_both_widths, fits, shoot
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT, run_worker
from tests.lifecycle.untidy import index_problems, make_untidy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def untidy(alice):
    store = resolve_store(alice, PROJECT, "private")
    make_untidy(Path(store.path))
    rescan_store(store)  # as the live mirror would
    return store


def test_consolidate_now_review_and_one_approval_tidy_the_store(live_server, page, untidy):
    page.set_viewport_size(SCREENS["desktop"])
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{untidy.pk}/")
    card = page.locator("#consolidation")
    assert "never" in card.inner_text()
    consolidate = card.get_by_role("button", name="Consolidate now")
    at_both_widths(
        page,
        "consolidation-1-store",
        part="#consolidation",
        where="the store",
        controls=[consolidate],
    )

    consolidate.click()
    page.wait_for_selector("#consolidation .progress")  # htmx swapped the card in place
    assert page.url.endswith(f"/stores/{untidy.pk}/")  # no reload
    assert card.get_by_role("button", name="Consolidate now").is_disabled()
    at_both_widths(page, "consolidation-2-running", part="#consolidation")
    run_worker()  # the task worker `serve` runs; the card follows it without a reload
    page.wait_for_selector("#consolidation >> text=waits for your review", timeout=20_000)
    review_link = page.locator("#consolidation >> text=Consolidation #")
    at_both_widths(page, "consolidation-3-done", part="#consolidation", controls=[review_link])

    review_link.click()
    page.wait_for_load_state()
    page.wait_for_selector("#index-review")
    assert page.locator("#before-lines .value").inner_text().startswith("216 / 200")
    assert page.locator("#before-lines").get_attribute("class").endswith("over")
    after = int(page.locator("#after-lines .value").inner_text().split(" / ")[0])
    assert after <= 200
    assert page.locator("#findings").inner_text().count("feedback_db") == 2
    proposal = Proposal.objects.get(kind="consolidation")
    index = proposal.changes.get(key="MEMORY.md")
    index_summary = page.locator(f"#change-{index.pk} summary")
    approve = page.locator("button[value=approve]")
    at_both_widths(
        page, "consolidation-4-review", where="the review", controls=[index_summary, approve]
    )
    at_both_widths(page, "consolidation-4-review-index", part="#index-review")

    index_summary.click()
    body = page.locator(f"#id_body-{index.pk}")
    body.fill(body.input_value() + "# Tidied by Alice\n")
    approve.click()
    page.wait_for_selector("text=Applied 2 changes")
    at_both_widths(page, "consolidation-5-applied")

    root = Path(untidy.path)
    assert index_problems(root) == {
        "over_lines": False,
        "over_bytes": False,
        "dangling": [],
        "doubled": [],
        "relative_dates": ["project_freeze.md"],  # "the end of the month" left for a person
    }
    assert (root / "MEMORY.md").read_text().endswith("# Tidied by Alice\n")
    page.goto(f"{live_server.url}/stores/{untidy.pk}/")
    assert "over" not in page.locator("#line-meter").get_attribute("class")
    at_both_widths(page, "consolidation-6-store-after", part="#consolidation")


def test_a_risky_proposal_needs_its_tick_without_javascript(live_server, browser, page, alice):
    store = resolve_store(alice, PROJECT, "private")
    root = Path(store.path)
    for name in ("alpha", "beta", "gamma"):
        write_memory(root, f"{name}.md", name.title(), f"All about {name}", "user")
    (root / "MEMORY.md").write_text(
        "- [Alpha](alpha.md) — a\n- [Beta](beta.md) — b\n- [Gamma](gamma.md) — g\n"
    )
    from memapp.lifecycle.proposals import do_propose_changes
    from memapp.memdir.extraction import ProposedChange

    proposal = do_propose_changes(
        "consolidation",
        store,
        alice,
        [
            ProposedChange("delete", "private", "beta.md", reason="merged into alpha.md"),
            ProposedChange("delete", "private", "gamma.md", reason="merged into alpha.md"),
        ],
    )
    log_in(page, live_server)
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    # axe needs the page's JavaScript: it checks the proposal here, before the no-script flow.
    at_both_widths(page, "consolidation-risky-js", where="a risky proposal")

    context = browser.new_context(viewport=SCREENS["desktop"], java_script_enabled=False)
    page = context.new_page()
    try:
        log_in(page, live_server)
        page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
        risks = page.locator("#risks").inner_text()
        assert "deletes 2 of the store's 3 memories (67 %)" in risks
        approve = page.locator("button[value=approve]")
        at_both_widths(page, "consolidation-risky", controls=[approve])
        approve.click()
        page.wait_for_selector("text=tick the box to apply it anyway")
        assert (root / "beta.md").exists() and (root / "gamma.md").exists()
        confirm = page.locator("input[name=confirm]")
        at_both_widths(page, "consolidation-risky-refused", controls=[confirm, approve])
        confirm.check()
        approve.click()
        page.wait_for_selector("text=Applied 2 changes")
        assert not (root / "beta.md").exists() and not (root / "gamma.md").exists()
        assert (root / "MEMORY.md").read_text() == "- [Alpha](alpha.md) — a\n"
    finally:
        context.close()


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_the_daily_logs_timeline(live_server, page, alice, screen):
    store = resolve_store(alice, PROJECT, "private")
    append_to_log(
        store.path,
        "logs/2026/03/2026-03-05.md",
        [
            "- 09:05 [project] Code freeze starts next Tuesday. Why: the release is cut.",
            "- 11:40 [feedback] Never mock the database in integration tests.",
            "- 16:20 Demo of the billing export went well",
        ],
    )
    append_to_log(store.path, "logs/2026/03/2026-03-04.md", ["- 17:00 [user] Alice is on call"])
    page.set_viewport_size(SCREENS[screen])
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/")
    page.click("#consolidation >> text=Daily logs")
    page.wait_for_load_state()
    days = page.locator("ol.timeline > li h2").all_inner_texts()
    assert [d.split(" ")[0] for d in days] == ["Thursday", "Wednesday"]
    assert page.locator(".log-entry .flag.warn").count() == 4
    shoot(page, f"consolidation-daily-logs-{screen}")
    check_accessibility(page, "the daily logs")
    assert fits(page)
