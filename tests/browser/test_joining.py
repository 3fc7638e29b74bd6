"""A team joins in minutes: staff invite, the invitee makes an account, connects an agent with
the browser login while `memhub-agent login` waits, and the agent syncs. Each page on the way,
on a desktop and on a 390 px phone, is axe clean, fits the screen and has a screenshot for a
person to look at."""

from __future__ import annotations

import subprocess

import pytest

from memapp.stores.models import MemoryFile, Project
from tests.browser.accessibility import accessibility_violations, describe, preload_axe
from tests.browser.login import log_in
from tests.browser.screens import SCREENS, at_both_widths, shoot
from tests.client.conftest import AGENT, Machine, git_checkout, topic
from tests.web.oidc_provider import CLIENT_ID, CLIENT_SECRET, start_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DANA_PASSWORD = "dana-long-password-42"


def test_staff_invite_and_the_invitees_agent_syncs(live_server, browser, settings, tmp_path, alice):
    """The people click through on a desktop and each page they see is checked at 390 px too:
    the account, the agent's login and its sync are the same at any width, so they run once."""
    settings.MEMHUB_DATA_DIR = tmp_path / "data"
    settings.MEMHUB_DISCOVER = False
    settings.MEMHUB_DEVICE_POLL_SECONDS = 1
    staff_context = browser.new_context(viewport=SCREENS["desktop"])
    dana_context = browser.new_context(viewport=SCREENS["desktop"])
    for context in (staff_context, dana_context):
        preload_axe(context)
    agent = None  # `memhub-agent login`, waiting for the browser's approval
    try:
        staff = staff_context.new_page()
        log_in(staff, live_server)
        staff.goto(f"{live_server.url}/projects/")
        staff.click("text=New project")
        staff.fill("#id_key", "acme/widgets")
        staff.click("button:has-text('Create project')")
        staff.wait_for_url("**/people/")
        staff.fill("#id_email", "dana@example.com")
        staff.check("label:has-text('acme/widgets')")
        staff.click("button:has-text('Create invitation')")
        staff.wait_for_load_state()
        link = staff.locator("#new-invitation pre").inner_text().strip()
        assert staff.locator("#new-invitation button.copy").is_visible()
        assert "dana@example.com" in staff.locator("#pending").inner_text()
        at_both_widths(staff, "joining-people", where="the People page")

        dana = dana_context.new_page()
        dana.goto(link)
        assert "acme/widgets" in dana.locator("main").inner_text()
        at_both_widths(dana, "joining-accept", where="the invitation")
        dana.fill("#id_username", "dana")
        dana.fill("#id_name", "Dana Scully")
        dana.fill("#id_password1", DANA_PASSWORD)
        dana.fill("#id_password2", DANA_PASSWORD)
        dana.click("button:has-text('Create my account')")
        dana.wait_for_url("**/connect/")
        assert dana.locator("h1").inner_text() == "Connect your agent"
        login_command = dana.locator("pre[data-copy='the login command']").inner_text()
        assert login_command == f"memhub-agent login {live_server.url}"
        assert dana.locator("button.copy").count() == 3
        at_both_widths(dana, "joining-connect", where="the Connect page")

        home = tmp_path / "dana-home"
        machine = Machine(home, git_checkout(home / "src" / "widgets"))
        agent = subprocess.Popen(
            [str(AGENT), *login_command.split()[1:], "--no-browser", "--name", "dana-laptop"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=machine.env,
            cwd=machine.checkout,
        )
        first = agent.stdout.readline()
        url = agent.stdout.readline().strip().removeprefix("(or open ").removesuffix(")")
        code = first.rsplit(" ", 1)[1].strip()

        approver = dana_context.new_page()  # the link, opened in another tab
        approver.goto(url)
        assert code in approver.locator("#device").inner_text()
        assert "dana-laptop" in approver.locator("#device").inner_text()
        at_both_widths(approver, "joining-device", where="the device login")
        approver.click("button:has-text('Approve')")
        approver.wait_for_url("**/connect/")
        out, err = agent.communicate(timeout=60)
        assert agent.returncode == 0, err
        assert "logged in to" in out

        machine.write("feedback_real_db.md", topic("Real DB", "Tests hit a real database"))
        machine.sync()
        project = Project.objects.get(key="acme/widgets")
        assert MemoryFile.objects.filter(
            store__project=project, store__owner__username="dana", path="feedback_real_db.md"
        ).exists()

        approver.goto(f"{live_server.url}/connect/")
        assert "last seen" in approver.locator("#connected").inner_text()
        at_both_widths(approver, "joining-connected", where="the connected agent")
        approver.goto(f"{live_server.url}/")
        assert approver.locator("#connect").count() == 0
        assert str(settings.MEMHUB_DATA_DIR) not in approver.content()
        at_both_widths(approver, "joining-home", where="the home page")
    finally:
        if agent is not None and agent.poll() is None:
            agent.kill()  # a check failed while the login waited
            agent.communicate()
        staff_context.close()
        dana_context.close()


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_single_sign_on_against_the_test_provider(live_server, page, settings, screen):
    provider, server = start_provider()
    settings.MEMHUB_OIDC_ISSUER = provider.url
    settings.MEMHUB_OIDC_CLIENT_ID = CLIENT_ID
    settings.MEMHUB_OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.AUTHENTICATION_BACKENDS = [  # as memapp.settings makes them
        "memapp.web.login_throttle.LoginThrottleBackend",
        "memapp.web.sso.SSOBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    page.set_viewport_size(SCREENS[screen])
    preload_axe(page.context)
    try:
        page.goto(f"{live_server.url}/")
        page.wait_for_url("**/login/?next=/")
        shoot(page, f"joining-sso-login-{screen}")
        assert not (violations := accessibility_violations(page)), describe(violations)
        page.click("text=Sign in with single sign-on")
        page.wait_for_url(f"{live_server.url}/")
        assert page.locator(".who").text_content() == "dana"
        assert page.locator("#connect").is_visible()
        shoot(page, f"joining-sso-home-{screen}")
        assert provider.pkce_checked == 1
    finally:
        server.shutdown()
