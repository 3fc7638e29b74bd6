"""Extraction keeps only what code cannot tell (issue 24): the extraction and distillation
requests carry the agent's whole list of what not to save and the rule that it holds even when
the user asks; without a model, an explicit request for something derivable is not proposed,
and the rest is typed by what it is and named from its substance."""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.lifecycle.models import ExtractionRun, Proposal
from memapp.memdir.daily_logs import append_to_log
from memapp.memdir.extraction import WHAT_NOT_TO_SAVE
from memapp.stores.projects import resolve_store
from tests.api.fake_anthropic import FakeAnthropic
from tests.lifecycle.conftest import PROJECT, consolidate_now, run_worker, upload
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits

EXCLUSIONS = [
    "Code patterns, conventions, architecture, file paths and project structure",
    "Git history, recent changes and who changed what",
    "Debugging recipes and fix steps",
    "Anything CLAUDE.md",
    "The current task's state",
    "even when the user explicitly asks to remember something",
    '"remember this PR list" becomes the release deadline or the decision the list is for',
]


@pytest.fixture
def fake(settings):
    with FakeAnthropic() as server:
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = server.url
        settings.MEMHUB_EXTRACTION_TIMEOUT = 5.0
        settings.MEMHUB_CONSOLIDATION_TIMEOUT = 5.0
        server.propose([])
        yield server


def test_the_extraction_and_distillation_requests_carry_the_whole_list(alice, alice_api, fake):
    t = Transcript()
    t.turn("remember this PR list: #12, #15, #19", "Noted.")
    upload(alice_api, t)
    run_worker()
    store = resolve_store(alice, PROJECT, "private")
    append_to_log(Path(store.path), "logs/2026/03/2026-03-05.md", ["- 10:00 [project] PRs"])
    consolidate_now(store, alice)
    systems = [request.body["system"] for request in fake.requests]
    assert len(systems) >= 2  # extraction, then distillation (and consolidation)
    for system in systems[:2]:
        assert WHAT_NOT_TO_SAVE in system
        for exclusion in EXCLUSIONS:
            assert exclusion in system


def test_without_a_model_a_derivable_request_is_not_proposed(alice_api, settings):
    settings.ANTHROPIC_API_KEY = ""
    t = Transcript()
    t.turn("remember that the fix was in src/app/db.py", "Noted.")
    t.turn("remember that we never deploy on Fridays", "Noted.")
    upload(alice_api, t)
    run_worker()
    (change,) = Proposal.objects.get().changes.all()
    assert (change.key, change.type, change.name) == (
        "feedback_no_friday_deploys.md",
        "feedback",
        "No Friday deploys",
    )
    (dropped,) = ExtractionRun.objects.get().dropped_changes
    assert dropped["reason"] == "not kept even though asked: a file path is recorded elsewhere"


def test_without_a_model_a_request_to_remember_a_secret_is_not_proposed(alice_api, settings):
    """The transcript holds it redacted: a memory of "[REDACTED:…" is no memory."""
    from tests.memdir.test_secret_rules import fake_tokens

    settings.ANTHROPIC_API_KEY = ""
    t = Transcript()
    t.turn(f"remember that the deploy key is {fake_tokens(8)['aws-access-token']}", "Noted.")
    t.turn("remember that we never deploy on Fridays", "Noted.")
    upload(alice_api, t)
    run_worker()
    (change,) = Proposal.objects.get().changes.all()
    assert change.name == "No Friday deploys"
    (dropped,) = ExtractionRun.objects.get().dropped_changes
    assert dropped["reason"] == (
        "not kept even though asked: it was a secret (redacted), which no memory keeps"
    )
