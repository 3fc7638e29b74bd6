"""Previewing a memory while editing it, in Debian's chromium: the preview follows the typing
without a page load, a link to a memory not written yet is marked and warned about."""

from __future__ import annotations

import pytest

from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Store
from tests.browser.accessibility import check_accessibility
from tests.browser.login import log_in
from tests.browser.screens import PHONE, at_both_widths

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_preview_follows_the_body_as_you_type(
    live_server, page, screenshot, memory_base, alice
):
    discover_local_stores(memory_base)
    store = Store.objects.get(kind="private")
    page.set_viewport_size(PHONE)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/m/user_role.md/edit/")
    page.evaluate("window.__sameDocument = true")
    page.fill("#id_body", "Alice works on **billing**. See [[Real DB]].\n")
    page.click("button:has-text('Preview')")
    preview = page.locator("#preview .markdown")
    preview.locator("strong").wait_for()
    assert preview.locator("strong").inner_text() == "billing"
    assert preview.locator("a.wikilink").inner_text() == "Real DB"
    page.locator("#id_body").press("End")
    page.locator("#id_body").press_sequentially("\nNext: [[deploy-checklist]]", delay=10)
    page.wait_for_selector("#preview .wikilink.missing")
    page.wait_for_selector("#warnings li:has-text('deploy-checklist')")
    assert page.locator("#warnings li").all_inner_texts() == [
        "Link [[deploy-checklist]] names no memory in this store yet."
    ]
    assert page.evaluate("window.__sameDocument === true")
    check_accessibility(page)
    screenshot("edit-preview-phone")


def test_the_preview_button_works_without_javascript(live_server, browser, memory_base, alice):
    discover_local_stores(memory_base)
    store = Store.objects.get(kind="private")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        log_in(page, live_server)
        page.goto(f"{live_server.url}/stores/{store.pk}/m/user_role.md/edit/")
        page.fill("#id_body", "# Alice\n\nBackend, *billing*.\n")
        page.click("button:has-text('Preview')")
        assert page.locator("#preview .markdown h1").inner_text() == "Alice"
        assert page.locator("#preview .markdown em").inner_text() == "billing"
        assert page.locator("#id_body").input_value() == "# Alice\n\nBackend, *billing*.\n"
    finally:
        context.close()


def test_a_header_that_cannot_be_read_is_shown_on_the_edit_form(
    live_server, page, memory_base, alice
):
    """The edit form of a memory whose header does not parse says why and shows its text,
    at both widths, with axe clean."""
    private = memory_base / "projects" / "-home-alice-app" / "memory"
    (private / "project_tabs.md").write_text(
        "---\nname: Tabbed\n\tdescription: tab indent\ntype: project\n---\nBody.\n"
    )
    discover_local_stores(memory_base)
    store = Store.objects.get(kind="private")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/m/project_tabs.md/edit/")
    assert "This file's header could not be read" in page.locator("#unread-header").inner_text()
    assert "\tdescription: tab indent" in page.locator("#raw-header").inner_text()
    at_both_widths(page, "edit-unread-header", where="the edit form of an unreadable header")
