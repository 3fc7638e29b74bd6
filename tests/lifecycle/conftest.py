"""Sessions of alice's (and bob's) reaching memhub through the API, and the task worker."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from tests.api.conftest import alice_api, bob_api  # noqa: F401 (fixtures shared with the API tests)
from tests.transcripts import Transcript

PROJECT = "acme/widgets"
MEMORY_DIR = "/home/alice/.claude/projects/-home-alice-src-widgets/memory"


def upload(client, transcript: Transcript, entries=None, **fields):
    """POST a session's entries as memhub-agent does; the JSON answer."""
    body = {
        "project": PROJECT,
        "memory_dir": MEMORY_DIR,
        "entries": transcript.entries if entries is None else entries,
        **fields,
    }
    response = client.post(f"/api/v1/sessions/{transcript.session_id}/entries", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def run_worker() -> None:
    """The task worker of the database backend runs what is queued, then stops."""
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload")


@pytest.fixture
def model(settings):
    """The fake Messages API, for consolidation and distillation (their own timeout)."""
    from tests.api.fake_anthropic import FakeAnthropic

    with FakeAnthropic() as server:
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = server.url
        settings.MEMHUB_CONSOLIDATION_TIMEOUT = 5.0
        yield server


def consolidate_now(store, user):
    """ "Consolidate now" on the store page, then the task worker: the run as it ended."""
    from memapp.lifecycle.tasks import request_consolidation

    status, run = request_consolidation(store, trigger="manual", requested_by=user)
    assert status == "queued"
    run_worker()
    run.refresh_from_db()
    return run


def distill_and_consolidate(user):
    """One run over `user`'s private store planted with what makes both proposals: its store,
    its two proposals by kind (distillation, consolidation), each rewriting the index, and the
    file the distillation creates."""
    from pathlib import Path

    from memapp.lifecycle.models import Proposal
    from memapp.stores.projects import resolve_store
    from tests.lifecycle.untidy import plant_distillation_and_consolidation

    store = resolve_store(user, PROJECT, "private")
    plant_distillation_and_consolidation(Path(store.path))
    consolidate_now(store, user)
    proposals = {p.kind: p for p in Proposal.objects.filter(store=store)}
    assert set(proposals) == {"distillation", "consolidation"}
    created = proposals["distillation"].changes.get(action="create").key
    return store, proposals, created
