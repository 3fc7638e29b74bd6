"""End to end with the real Codex CLI (docs/design.md §28): memhub's hooks and MCP server
installed by `memhub-agent install codex`, a real memhub server, and `codex exec`'s model
requests going to a fake OpenAI Responses API (a `model_providers` entry with its `base_url`).
The turn's request must hold memhub's session-start context and the memory recalled for the
prompt; the rollout file, converted at the client, reaches memhub as the person's and the
model's words. Codex runs hooks only once trusted: the test passes
`--dangerously-bypass-hook-trust`, as automation that checked them may."""

from __future__ import annotations

import pytest

from memapp.lifecycle.models import Session
from tests.client.conftest import topic
from tests.other_agents import FakeOpenAI, ask_codex, codex_config, needs_codex

pytestmark = [pytest.mark.django_db(transaction=True), needs_codex]

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
    return machine_a


def test_the_model_gets_memhubs_context_and_the_rollout_reaches_memhub(a, alice):
    config = a.home / ".codex" / "config.toml"
    with FakeOpenAI("Yes: use the real database.") as fake:
        config.parent.mkdir(parents=True)
        config.write_text(codex_config(fake))
        installed = a.run("install", "codex")
        assert installed.returncode == 0, installed.stderr
        assert "trust" in installed.stdout
        result = ask_codex(a.env, a.checkout, PROMPT)
    assert result.returncode == 0, result.stderr
    turns = [r for r in fake.requests if PROMPT in r.text]
    assert turns, "the CLI never sent the prompt to the model"
    sent = turns[0].text

    assert "- [Real DB](feedback_db.md) — integration tests, no mocks" in sent
    assert f"{a.memory_dir / 'feedback_db.md'}" in sent
    assert "Use the real database in integration tests." in sent  # recalled for the prompt

    session = Session.objects.get(owner=alice)
    said = {(e.type, e.prose) for e in session.entries.all()}
    assert ("user", PROMPT) in said
    assert ("assistant", "Yes: use the real database.") in said
    assert session.agent == "codex"
    assert not any(prose.startswith("<environment_context>") for _, prose in said)

    removed = a.run("install", "codex", "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert config.read_text() == codex_config(fake)
