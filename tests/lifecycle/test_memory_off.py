"""Memory off means off (issue 24): the project's `auto_memory` flag turned off stops recall,
extraction, consolidation and team memory writes for that project, not only the prompt; each
switch is shown doing its work while on, then doing nothing while off."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from django.utils import timezone

from memapp.lifecycle.gates import check_gates
from memapp.lifecycle.models import Proposal, Session
from memapp.stores.flags import set_flag
from memapp.stores.models import Project
from memapp.stores.projects import resolve_store
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT, consolidate_now, run_worker, upload
from tests.lifecycle.untidy import make_untidy
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits


@pytest.fixture(autouse=True)
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def store(alice):
    return resolve_store(alice, PROJECT, "private")


def memory_off(alice, store) -> None:
    set_flag("auto_memory", False, project=store.project, user=alice)


def test_recall_recalls_nothing(alice_api, alice, store):
    write_memory(Path(store.path), "project_deploys.md", "Deploys", "deploy checklist", "project")
    body = {"project": PROJECT, "query": "deploy checklist"}
    on = alice_api.post("/api/v1/recall", body, format="json").json()
    assert [m["path"] for m in on["memories"]] == ["project_deploys.md"]
    memory_off(alice, store)
    off = alice_api.post("/api/v1/recall", body, format="json").json()
    assert (off["memories"], off["selector"]) == ([], "disabled")


@pytest.mark.parametrize("on", [True, False])
def test_extraction_proposes_nothing(alice_api, alice, store, on):
    if not on:
        memory_off(alice, store)
    t = Transcript()
    t.turn("remember that we never deploy on Fridays", "Noted.")
    assert upload(alice_api, t)["extraction"] == ("queued" if on else "off")
    run_worker()
    assert Proposal.objects.filter(kind="extraction").exists() is on


def test_consolidation_is_skipped_scheduled_or_now(alice, store):
    make_untidy(Path(store.path))
    for i in range(5):
        Session.objects.create(
            owner=alice,
            project=store.project,
            store=store,
            session_id=f"s-{i}",
            last_entry_at=timezone.now() - datetime.timedelta(hours=1),
        )
    (due,) = check_gates(timezone.now(), [store])
    assert due.gate == "due"
    memory_off(alice, store)
    (verdict,) = check_gates(timezone.now(), [store])
    assert verdict.gate == "memory_off"
    run = consolidate_now(store, alice)
    assert (run.gate, run.outcome) == ("memory_off", "skipped")
    assert run.gate_words == "auto memory is turned off for the project"
    assert not Proposal.objects.exists()


def test_a_team_memory_put_is_refused_naming_the_rule(alice_api, alice):
    project = Project.objects.create(key="acme/widgets", repo_slug="acme/widgets")
    project.members.add(alice)
    url = "/api/claude_code/team_memory?repo=acme%2Fwidgets"
    body = {"entries": {"feedback_db.md": "Use the real database.\n"}}
    assert alice_api.put(url, body, format="json").status_code == 200
    set_flag("auto_memory", False, project=project, user=alice)
    body = {"entries": {"feedback_db.md": "Mock the database.\n"}}
    refused = alice_api.put(url, body, format="json")
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "auto_memory_off"
    assert "Auto memory is turned off for this project" in error["message"]
    assert alice_api.get(url).json()["content"]["entries"] == {
        "feedback_db.md": "Use the real database.\n"
    }
