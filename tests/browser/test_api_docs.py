"""The API docs stand alone: everything they load comes from memhub itself, and they show
operations by the names and examples a person would choose. axe checks them with every other
page (tests/browser/test_every_page.py: at 1280 px in light and dark mode, and at 390 px)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.browser.login import log_in
from tests.browser.screens import DESKTOP, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_load_nothing_from_outside(live_server, page, alice):
    hosts: list[str] = []

    def record(route):
        hosts.append(urlsplit(route.request.url).hostname or "")
        if hosts[-1] in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            route.abort()  # never reach out, even if a page asked to

    page.route("**/*", record)
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/api/docs/")
    recall = page.locator("h2", has_text="Recall the memories that fit a query")
    recall.wait_for()
    page.wait_for_load_state("networkidle")
    assert hosts and set(hosts) <= {"127.0.0.1", "localhost"}, set(hosts)
    assert page.locator("h1").first.inner_text().startswith("memhub agent API")
    recall.scroll_into_view_if_needed()
    assert "why are the integration tests slow?" in page.content()  # the request example
    shoot(page, "api-docs-recall", part="h2:has-text('Recall the memories that fit a query')")
