"""A new user's first minutes, in Debian's chromium."""

import pytest

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
