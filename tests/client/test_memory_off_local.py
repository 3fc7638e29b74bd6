"""A person's own switches (issue 24): `autoMemoryEnabled: false` in their Claude Code settings
keeps memhub-agent from syncing team memory (no PUT), as the hooks already stay silent (no
recall, no upload: nothing to extract or consolidate; tests/client/test_hooks.py); and
`autoDreamEnabled: false` reaches the server with the session, whose scheduled consolidation
of their store then waits ("Consolidate now" still works, as Claude Code's /dream does)."""

from __future__ import annotations

import datetime
import json

import pytest
from django.utils import timezone

from memapp.lifecycle.gates import check_gates
from memapp.lifecycle.models import Session
from memapp.stores.models import Store
from tests.client.conftest import Machine
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)


def settings_file(machine: Machine, settings: dict) -> None:
    path = machine.home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


def test_team_sync_puts_nothing_when_memory_is_off_here(machine_a, recording_server):
    machine_a.extra_env.update(MEMHUB_URL=recording_server.url, MEMHUB_TOKEN="mh_x")
    machine_a.write("team/feedback_db.md", "Use the real database.\n")
    machine_a.run("team", "sync")
    assert any(r.startswith("PUT ") or r.startswith("GET ") for r in recording_server.requests)
    recording_server.requests.clear()

    settings_file(machine_a, {"autoMemoryEnabled": False})
    result = machine_a.run("team", "sync")
    assert result.returncode != 0
    assert "autoMemoryEnabled: false" in result.stderr
    assert recording_server.requests == []


@pytest.mark.parametrize("dream", [True, False])
def test_auto_dream_off_keeps_scheduled_consolidation_of_the_store_waiting(
    machine_a, server, dream
):
    machine_a.login(server)
    if not dream:
        settings_file(machine_a, {"autoDreamEnabled": False})
    t = Transcript(cwd=str(machine_a.checkout))
    t.turn("Why are the integration tests slow?", "The fixtures rebuild the database.")
    path = t.write(machine_a.home / ".claude" / "projects" / "-src" / f"{t.session_id}.jsonl")
    payload = {
        "session_id": t.session_id,
        "transcript_path": str(path),
        "cwd": str(machine_a.checkout),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    assert machine_a.hook("stop", payload).returncode == 0
    uploaded = Session.objects.get()
    assert uploaded.auto_dream is dream
    store = Store.objects.get(pk=uploaded.store_id)
    for i in range(5):  # earlier sessions: enough for the session gate
        Session.objects.create(
            owner=uploaded.owner,
            project=uploaded.project,
            store=store,
            session_id=f"earlier-{i}",
            last_entry_at=timezone.now() - datetime.timedelta(hours=2),
        )
    (verdict,) = check_gates(timezone.now(), [store])
    assert verdict.gate == ("due" if dream else "dream_off")
