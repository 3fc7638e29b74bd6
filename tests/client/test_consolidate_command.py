"""`memhub-agent consolidate [--cancel]`: "Consolidate now" for the project's store from the
command line, and cancelling the run before it starts (docs/design.md §14.2)."""

from __future__ import annotations

import json

import pytest

from memapp.lifecycle.models import ConsolidationRun
from tests.client.conftest import topic

pytestmark = pytest.mark.django_db(transaction=True)


def test_consolidate_queues_a_run_and_cancel_ends_it(machine_a, server):
    machine_a.login(server)
    machine_a.write("feedback_db.md", topic("Real DB", "Integration tests hit a real database"))
    machine_a.sync()

    queued = machine_a.run("consolidate")
    assert queued.returncode == 0, queued.stderr
    run = ConsolidationRun.objects.get()
    assert queued.stdout == f"consolidation #{run.pk} queued: the proposals wait for your review\n"
    assert (run.trigger, run.requested_by.username) == ("manual", "alice")

    cancelled = machine_a.run("consolidate", "--cancel", "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    run.refresh_from_db()
    assert (run.status, run.outcome) == ("done", "cancelled")
    assert machine_a.run("consolidate", "--cancel").returncode != 0  # nothing left to cancel
