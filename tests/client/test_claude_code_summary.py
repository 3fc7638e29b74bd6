"""The real Claude Code CLI with its config dir outside HOME (as in containers and CI): its
transcript arrives through the Stop hook, memhub summarizes the session (docs/design.md
§14.10), and resuming the session (`claude -p --resume`) gives the agent that summary through
the SessionStart hook."""

from __future__ import annotations

import shutil

import pytest
from django.core.management import call_command

from memapp.lifecycle.models import Session, SessionSummary
from memapp.stores.tokens import do_create_api_token
from tests.api.fake_anthropic import FakeAnthropic
from tests.claude_code import ask_claude, install_hooks, needs_claude
from tests.client.conftest import Machine, git_checkout

pytestmark = [pytest.mark.django_db(transaction=True), needs_claude]

TASK = "Add rate limiting to the widgets API: 100 requests per minute per token."


@pytest.fixture
def machine(tmp_path, live_server, alice, settings) -> Machine:
    settings.MEMHUB_DISCOVER = False
    settings.ANTHROPIC_API_KEY = ""  # memhub's own rules write the summary
    home = tmp_path / "home"
    machine = Machine(home, git_checkout(home / "src" / "widgets"))
    config = tmp_path / "ci" / "claude-config"  # outside HOME
    machine.extra_env["CLAUDE_CONFIG_DIR"] = str(config)
    _, token = do_create_api_token(alice, "ci")
    result = machine.run("login", live_server.url, "--token", "-", stdin=token + "\n")
    assert result.returncode == 0, result.stderr
    install_hooks(machine)
    config.mkdir(parents=True)
    shutil.copy(home / ".claude" / "settings.json", config / "settings.json")
    return machine


def test_a_resumed_session_is_given_its_summary(machine, tmp_path):
    with FakeAnthropic() as fake:
        fake.answer_text("On it.")
        details = " ".join(f"Endpoint {n} needs its own bucket." for n in range(1_400))
        ask_claude(machine, fake, f"{TASK} {details}")

        session = Session.objects.get()
        assert session.entry_count > 0 and session.skipped == {}
        assert session.tokens >= 10_000
        call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload")
        summary = SessionSummary.objects.get(session=session)
        assert summary.text.startswith(f"# Session Title\n{TASK[:40]}")

        sent = ask_claude(machine, fake, "Carry on.", ("--resume", session.session_id))

    context = sent.split("SessionStart hook additional context: ", 1)[1]
    assert "Summary of this session so far (kept by memhub):" in context
    assert f"# Task specification\n{TASK}" in context
