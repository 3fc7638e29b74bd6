"""MEMORY.md as a memory, in Debian's chromium at 1280 and 390 px: a memory's index line on its
edit page (kept as it is unless changed), the index's history with a diff, and Restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Store
from tests.browser.accessibility import check_accessibility
from tests.browser.login import log_in
from tests.browser.screens import SCREENS, fits

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CURATED = "- [Real DB](feedback_tests.md) — curated: never mock the DB (see #412)"


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_the_index_line_is_edited_on_the_memory_s_page_and_undone_from_the_index_history(
    live_server, page, screenshot, memory_base, alice, screen
):
    discover_local_stores(memory_base)
    store = Store.objects.get(kind="private")
    index = Path(store.path) / "MEMORY.md"
    original = index.read_text()
    page.set_viewport_size(SCREENS[screen])
    log_in(page, live_server)

    # The edit form shows the line as it is; changing the body alone leaves it alone.
    page.goto(f"{live_server.url}/stores/{store.pk}/m/feedback_tests.md/edit/")
    line = page.get_by_label("Index line")
    assert line.input_value() == "- [Real DB](feedback_tests.md) — no mocks"
    assert fits(page)
    check_accessibility(page)
    screenshot(f"index-line-edit-{screen}")
    page.fill("#id_body", "Use the real database.\n\n**Why:** x.\n**How to apply:** y.\n")
    page.fill("#id_description", "Integration tests hit a real database")
    page.click(".memory-form .form-actions button:first-child")
    page.wait_for_url(f"**/stores/{store.pk}/m/feedback_tests.md")
    assert index.read_text() == original

    # A curated line typed on the form is what MEMORY.md gets.
    page.goto(f"{live_server.url}/stores/{store.pk}/m/feedback_tests.md/edit/")
    page.get_by_label("Index line").fill(CURATED)
    page.click(".memory-form .form-actions button:first-child")
    page.wait_for_url(f"**/stores/{store.pk}/m/feedback_tests.md")
    assert CURATED + "\n" in index.read_text()

    # The store page leads to the index's history: who changed it, the diff, Restore.
    page.goto(f"{live_server.url}/stores/{store.pk}/")
    page.click("#index-history")
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == "History of MEMORY.md"
    rows = page.locator("table.versions tbody tr")
    assert rows.count() == 2
    assert "alice · the web UI · the line of feedback_tests.md" in rows.first.inner_text()
    rows.first.get_by_role("link", name="Changes").click()
    page.wait_for_load_state()
    page.wait_for_selector("#compare")
    assert "1 line added · 1 line removed" in page.locator("#compare").inner_text()
    assert fits(page)
    check_accessibility(page)
    screenshot(f"index-history-{screen}")
    rows.nth(1).get_by_role("button", name="Restore this version").click()
    page.wait_for_url(f"**/stores/{store.pk}/#index")
    assert "The version it replaced is kept in the history." in page.inner_text("main")
    assert index.read_text() == original
