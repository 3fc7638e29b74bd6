"""Logging in through the login form, as a person does, for the browser tests."""

from __future__ import annotations

from tests.conftest import PASSWORD


def log_in(page, live_server, username: str = "alice") -> None:
    """Fill in and send the login form; the home page is where it lands."""
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
