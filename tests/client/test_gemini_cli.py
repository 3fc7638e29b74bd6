"""End to end with the real Gemini CLI (docs/design.md §28): memhub's hooks and MCP server
installed by `memhub-agent install gemini-cli`, a real memhub server, and the CLI's model
requests going to a fake Gemini API. The request of the turn must hold memhub's session-start
context (the project's index, the team index, what waits for review) and the memory recalled
for the prompt; the session's transcript, converted at the client, reaches memhub as the
person's and the model's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memapp.lifecycle.models import Session
from memapp.stores.projects import resolve_store
from teamsync.models import TeamConflict
from tests.client.conftest import SLUG, topic
from tests.other_agents import FakeGemini, ask_gemini, needs_gemini

pytestmark = [pytest.mark.django_db(transaction=True), needs_gemini]

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
            body="Use the real database in integration tests.\n",
        ),
    )
    machine_a.sync()
    settings = machine_a.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    installed = machine_a.run("install", "gemini-cli")
    assert installed.returncode == 0, installed.stderr
    return machine_a


def test_the_model_gets_memhubs_context_and_the_session_reaches_memhub(a, alice, server):
    team = resolve_store(alice, SLUG, "team")
    (Path(team.path) / "MEMORY.md").write_text("- [Deploys](deploys.md) — through ArgoCD\n")
    TeamConflict.objects.create(store=team, key="deploys.md", kind="edit", ours="a", theirs="b")

    with FakeGemini("Yes: use the real database.") as fake:
        result = ask_gemini(a.env, a.checkout, fake, PROMPT)
    assert result.returncode == 0, result.stderr
    turns = fake.turns(PROMPT)
    assert turns, "the CLI never sent the prompt to the model"
    sent = turns[0].text

    assert "- [Real DB](feedback_db.md) — integration tests, no mocks" in sent
    # The team index, its wrapper's angle brackets escaped on the way (`&lt;team-memory-content`).
    assert 'team-memory-content source="shared"&gt;\n- [Deploys](deploys.md)' in sent
    assert f"memhub: waiting for your review: team sync conflicts (1) at {server.url}/sync/" in sent
    assert f"{a.memory_dir / 'feedback_db.md'}" in sent
    assert "Use the real database in integration tests." in sent  # recalled for the prompt

    session = Session.objects.get(owner=alice)
    said = {(e.type, e.prose) for e in session.entries.all()}
    assert ("user", PROMPT) in said  # the person's words, without the hooks' context
    assert ("assistant", "Yes: use the real database.") in said
    assert session.agent == "gemini-cli"


def test_uninstall_leaves_the_settings_as_they_were(a):
    settings = a.home / ".gemini" / "settings.json"
    removed = a.run("install", "gemini-cli", "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text()) == {
        "security": {"auth": {"selectedType": "gemini-api-key"}}
    }
