"""Issue 13's "done when" with the real Claude Code CLI (docs/design.md §14, §16).

Session 1: the person tells the real `claude` "remember that we deploy on Fridays"; its Stop and
SessionEnd hooks (`memhub-agent hook claude-code stop|session-end`, installed as the README
shows) upload the transcript the CLI wrote (`claude -p`, a non-interactive session, so the
project lets extraction read such sessions: `extraction_non_interactive`). The task worker
runs the extraction with no API key (the offline detector), which leaves a pending proposal;
a person approves it in Debian's chromium. Session 2: the SessionStart hook pulls the
approved file into the local memory dir before the model is asked, and the request the CLI
sends the model holds it: in the index the hook adds (the one the CLI loaded itself is older)
and among the memories recalled for the prompt.

The model is the fake Messages API of `tests/api/fake_anthropic.py`; without the CLI (see
`tests/claude_code.py`) the test is skipped, saying why.
"""

from __future__ import annotations

import pytest

from memapp.lifecycle.models import Proposal, Session
from memapp.stores.flags import set_flag
from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token
from tests.api.fake_anthropic import FakeAnthropic
from tests.browser.login import log_in
from tests.browser.screens import DESKTOP, PHONE
from tests.claude_code import ask_claude, install_hooks, needs_claude
from tests.client.conftest import SLUG, Machine, git_checkout
from tests.lifecycle.conftest import run_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_claude]

REMEMBER = "remember that we deploy on Fridays"
ASK = "Which day do we deploy on?"
MEMORY_FILE = "project_friday_deploys.md"  # typed by what it is, named from its substance


@pytest.fixture
def machine(tmp_path, live_server, alice, settings) -> Machine:
    """Alice's computer: logged in to memhub, memhub's hooks in her Claude Code settings."""
    settings.MEMHUB_DISCOVER = False
    settings.ANTHROPIC_API_KEY = ""  # no key on the server: the offline detector proposes
    home = tmp_path / "home"
    machine = Machine(home, git_checkout(home / "src" / "widgets"))
    _, token = do_create_api_token(alice, "laptop")
    result = machine.run("login", live_server.url, "--token", "-", stdin=token + "\n")
    assert result.returncode == 0, result.stderr
    install_hooks(machine)
    # `claude -p` is a non-interactive session, which extraction leaves alone as Claude Code
    # does, unless the project says otherwise (a person at a terminal is what `-p` stands in
    # for here).
    project = resolve_store(alice, SLUG, "private").project
    set_flag("extraction_non_interactive", True, project=project, user=alice)
    return machine


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        server.answer_text("Noted.")
        yield server


def test_a_real_session_becomes_a_memory_the_next_session_is_given(
    live_server, page, screenshot, machine, fake
):
    ask_claude(machine, fake, REMEMBER)

    session = Session.objects.get()  # the transcript the CLI wrote, uploaded by its hooks
    assert session.ended_at is not None  # SessionEnd came too
    assert session.skipped == {}  # every line the CLI wrote is conversation or its bookkeeping
    run_worker()
    proposal = Proposal.objects.get(status=Proposal.Status.PENDING)
    assert not (machine.memory_dir / MEMORY_FILE).exists()  # nothing written before approval

    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.click("nav a[href='/proposals/']")
    page.click(f"a[href='/proposals/{proposal.pk}/']")
    page.wait_for_selector("#decide")
    assert REMEMBER in page.locator("#source").inner_text()
    screenshot("claude-code-01-proposal")
    page.set_viewport_size(PHONE)
    screenshot("claude-code-02-proposal-390")
    page.set_viewport_size(DESKTOP)
    page.click("button[value=approve]")
    page.wait_for_selector(".message.success")
    assert f"Applied: {MEMORY_FILE}." in page.inner_text(".messages")
    screenshot("claude-code-03-applied")

    sent = ask_claude(machine, fake, ASK)

    assert "We deploy on Fridays" in (machine.memory_dir / MEMORY_FILE).read_text()
    session_start = sent.split("SessionStart hook additional context: ", 1)[1]
    assert session_start.startswith(
        f"Contents of {machine.memory_dir / 'MEMORY.md'} (changed in memhub since this session"
    )
    assert f"[Friday deploys]({MEMORY_FILE})" in session_start
    recalled = sent.split("UserPromptSubmit hook additional context: ", 1)[1]
    assert f"{machine.memory_dir / MEMORY_FILE}:" in recalled
    assert "We deploy on Fridays." in recalled
