"""One memory whichever agent wrote it (docs/design.md §28): "remember that …" said to the real
Gemini CLI becomes a proposal in memhub labelled with its agent; once approved, the next
session of the real Codex CLI in the same project is given that memory at session start and
by recall. Both CLIs run against fake model APIs on 127.0.0.1, with memhub's hooks installed by
`memhub-agent install`; extraction is the offline detector (no key on the server)."""

from __future__ import annotations

import json

import pytest

from memapp.lifecycle.models import Proposal, Session
from memapp.lifecycle.proposals import do_apply_proposal
from memapp.stores.flags import set_flag
from memapp.stores.projects import resolve_store
from tests.client.conftest import SLUG
from tests.lifecycle.conftest import run_worker
from tests.other_agents import (
    FakeGemini,
    FakeOpenAI,
    ask_codex,
    ask_gemini,
    codex_config,
    needs_codex,
    needs_gemini,
)

pytestmark = [pytest.mark.django_db(transaction=True), needs_gemini, needs_codex]

REMEMBER = "remember that we deploy on Fridays"
ASK = "Which day do we deploy on?"


def test_what_gemini_cli_was_told_is_given_to_codex(machine_a, server, alice, settings):
    settings.ANTHROPIC_API_KEY = ""
    a = machine_a
    a.login(server)
    # Headless runs are non-interactive sessions, which extraction leaves alone unless the
    # project says otherwise (as in the Claude Code loop test).
    set_flag(
        "extraction_non_interactive",
        True,
        project=resolve_store(alice, SLUG, "private").project,
        user=alice,
    )
    gemini_settings = a.home / ".gemini" / "settings.json"
    gemini_settings.parent.mkdir(parents=True)
    gemini_settings.write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    with FakeGemini("Noted.") as gemini:
        assert a.run("install", "gemini-cli").returncode == 0
        said = ask_gemini(a.env, a.checkout, gemini, REMEMBER)
    assert said.returncode == 0, said.stderr

    assert Session.objects.get().agent == "gemini-cli"
    run_worker()
    proposal = Proposal.objects.get(status=Proposal.Status.PENDING)
    assert proposal.agents == ["Gemini CLI"]
    do_apply_proposal(proposal, alice)

    with FakeOpenAI("Fridays.") as openai:
        config = a.home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(codex_config(openai))
        assert a.run("install", "codex").returncode == 0
        asked = ask_codex(a.env, a.checkout, ASK)
    assert asked.returncode == 0, asked.stderr
    sent = next(r.text for r in openai.requests if ASK in r.text)
    assert "We deploy on Fridays" in sent
