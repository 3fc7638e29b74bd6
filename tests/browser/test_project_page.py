"""A project's page as staff use it (docs/design.md §1): its name, its aliases and merging,
at 1,280 and 390 px, axe clean, with screenshots for a person to look at."""

from __future__ import annotations

import pytest

from memapp.stores.models import Project
from tests.browser.accessibility import accessibility_violations, describe, preload_axe
from tests.browser.login import log_in
from tests.browser.screens import DESKTOP, PHONE, SCREENS, fits

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def projects(alice, bob):
    discovered = Project.objects.create(key="-tmp-ux-demo", name="/tmp/ux-demo")
    discovered.members.add(alice, bob)
    Project.objects.create(key="acme/payments", repo_slug="acme/payments").members.add(bob)
    return discovered


def test_staff_name_a_project_and_merge_its_twin_on_its_page(
    live_server, page, screenshot, projects
):
    preload_axe(page.context)
    log_in(page, live_server)
    url = f"{live_server.url}/projects/{projects.pk}/members/"
    for label, screen in SCREENS.items():
        page.set_viewport_size(screen)
        page.goto(url)
        assert "This project has no repo slug yet" in page.locator("main").inner_text()
        assert fits(page)
        assert not (found := accessibility_violations(page)), describe(found)
        screenshot(f"project-page-{label}")

    page.set_viewport_size(PHONE)  # a wrong slug's error, on the narrow screen
    page.fill("#id_slug", "payments")
    page.click("button:has-text('Save name')")
    page.wait_for_load_state()
    main = page.locator("main").inner_text()
    assert "'payments' is not a repo slug: write it as owner/repo" in main
    assert not (found := accessibility_violations(page)), describe(found)
    screenshot("project-page-bad-slug-phone")

    page.goto(url)
    page.select_option("#id_source", label="acme/payments")
    page.check("#id_confirm")
    page.click("button:has-text('Merge')")
    page.wait_for_load_state()
    main = page.locator("main").inner_text()
    assert "Merged acme/payments into" in main
    page.goto(url)
    assert (
        "Agents find this project by its repo slug acme/payments"
        in page.locator("main").inner_text()
    )
    assert page.input_value("#id_slug") == "acme/payments"
    assert page.input_value("#id_aliases") == "-tmp-ux-demo"
    assert Project.objects.count() == 1
    page.set_viewport_size(DESKTOP)
    screenshot("project-page-merged-desktop")
