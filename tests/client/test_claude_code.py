"""End to end with the real Claude Code CLI (docs/design.md §16): memhub's hooks installed in its
settings, a real memhub server, and the client's model requests going to a fake Messages API.
What the client sends to the model must hold what memhub's hooks added, and only that: at
session start the index the server just changed, the team index and what waits for review;
with the prompt the recalled memory, as plain text (the client would escape a
`<system-reminder>` tag to `&lt;system-reminder>`). With memory off, none of it.

The harness (the CLI, the hooks as the README installs them, the request's text) is
`tests/claude_code.py`; without the CLI this test is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.stores.actions import do_save_memory
from memapp.stores.models import Store
from memapp.stores.projects import resolve_store
from teamsync.models import BlockedFile, TeamConflict
from tests.api.fake_anthropic import FakeAnthropic
from tests.claude_code import ask_claude, install_hooks, needs_claude
from tests.client.conftest import SLUG, topic

pytestmark = [pytest.mark.django_db(transaction=True), needs_claude]

PROMPT = "Should the integration tests use a real database?"


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    machine_a.write("MEMORY.md", "- [Real DB](feedback_db.md) — integration tests, no mocks\n")
    machine_a.write(
        "feedback_db.md",
        topic(
            "Integration tests use a real database",
            "Integration tests must hit a real database, not mocks",
            body="Use the real database in integration tests.\n\n**Why:** mocks hid a broken "
            "migration.\n**How to apply:** every test under tests/integration.\n",
        ),
    )
    machine_a.sync()
    install_hooks(machine_a)
    return machine_a


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        server.answer_text("Yes: use the real database.")
        yield server


def test_the_model_gets_what_memhubs_hooks_add_and_nothing_twice(a, alice, fake, server):
    private = Store.objects.get(kind=Store.Kind.PRIVATE, owner=alice, project__key=SLUG)
    do_save_memory(  # an edit approved in the browser, after this machine's last sync
        private,
        alice,
        name="CI caches",
        description="CI caches the node modules between runs",
        memory_type="project",
        body="Cached since 2026-03-01.\n",
        via="ui",
    )
    team = resolve_store(alice, SLUG, "team")
    (Path(team.path) / "MEMORY.md").write_text(
        "- [Deploys](deploys.md) — through ArgoCD\n- [CI](reference_ci.md) — the runner's setup\n"
    )
    TeamConflict.objects.create(store=team, key="deploys.md", kind="edit", ours="a", theirs="b")
    # A file team sync keeps back: its line reaches no teammate, and no model either.
    BlockedFile.objects.create(store=team, key="reference_ci.md", reason="secret", hits=[])

    sent = ask_claude(a, fake, PROMPT)

    session_start = sent.split("SessionStart hook additional context: ", 1)[1]
    assert session_start.startswith(
        f"Contents of {a.memory_dir / 'MEMORY.md'} (changed in memhub since this session loaded it"
    )
    assert "- [CI caches](" in session_start.split("\n\n", 2)[1]  # pulled before the model saw it
    assert '<team-memory-content source="shared">\n- [Deploys](deploys.md)' in session_start
    assert "reference_ci.md" not in sent and "the runner's setup" not in sent
    assert (
        f"memhub: waiting for your review: team sync conflicts (1) at {server.url}/sync/"
        in session_start
    )
    recalled = sent.split("UserPromptSubmit hook additional context: ", 1)[1]
    assert recalled.startswith(f"Memory (saved today): {a.memory_dir / 'feedback_db.md'}:\n\n")
    assert "Use the real database in integration tests." in recalled
    assert "&lt;system-reminder" not in sent
    # The client writes its own memory section; memhub's is not sent a second time.
    assert "## Types of memory" not in sent and "# auto memory" not in sent


def test_with_memory_off_the_model_gets_nothing_from_memhub(a, fake):
    sent = ask_claude(a, fake, PROMPT, CLAUDE_CODE_DISABLE_AUTO_MEMORY="1")

    assert "hook additional context" not in sent
    assert "feedback_db.md" not in sent
