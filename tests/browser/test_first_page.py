"""A new user's first minutes, in Debian's chromium."""

import pytest

from tests.browser.accessibility import accessibility_violations, preload_axe
from tests.browser.screens import SCREENS
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_new_user_logs_in_and_sees_their_memory_directories(
    live_server, page, screenshot, memory_base, alice
):
    page.goto(f"{live_server.url}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    screenshot("first-page-login")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("text=No memory directories yet.").is_visible()
    page.click("text=Rescan")
    page.wait_for_load_state()
    assert page.locator(".message.success").inner_text() == (
        "Rescanned: 3 memory directories found."
    )
    assert page.locator(".summary").inner_text() == "3 stores, 4 memories."
    rows = page.locator("table.stores tbody tr")
    assert rows.count() == 3
    assert rows.nth(0).locator("td").first.inner_text() == "PRIVATE private"
    assert rows.nth(0).locator("td.num").inner_text() == "2"
    assert rows.nth(2).locator("td").first.inner_text() == "AGENT agent code-reviewer (user scope)"
    screenshot("first-page-home")


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_too_many_failed_logins_get_a_sentence_saying_how_long_to_wait(
    live_server, page, screenshot, alice, screen
):
    page.set_viewport_size(SCREENS[screen])
    preload_axe(page.context)
    page.goto(f"{live_server.url}/login/")
    for attempt in range(5):
        page.fill("#id_username", "alice")
        page.fill("#id_password", f"guess {attempt}")
        page.click("button[type=submit]")
        page.wait_for_load_state()
    alert = page.get_by_role("alert")
    assert alert.inner_text() == (
        "Too many failed logins for this username or from this address: wait 15 minutes and "
        "try again, or ask a staff member to unlock it."
    )
    assert not accessibility_violations(page)
    screenshot(f"login-locked-{screen}")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert page.get_by_role("alert").is_visible()  # the right password waits too
