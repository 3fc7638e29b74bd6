"""Previewing a memory while editing it, in Debian's chromium: the preview follows the typing
without a page load, a link to a memory not written yet is marked and warned about."""

from __future__ import annotations

import pytest

from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Store
from tests.browser.accessibility import check_accessibility
from tests.browser.login import log_in
from tests.browser.screens import PHONE

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
