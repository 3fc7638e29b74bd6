""" "Consolidate now" from the agent API and `memhub-agent consolidate`, and cancelling a queued
or running consolidation (the API, and the store page's Cancel, which asks first): nothing
proposed, the lock's mtime as it was (docs/design.md §14.2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from memapp.lifecycle.models import ConsolidationRun, Proposal
from memapp.memdir.consolidate_lock import LOCK_NAME
from memapp.stores.projects import resolve_store
from tests.conftest import PASSWORD
from tests.lifecycle.conftest import PROJECT, run_worker
from tests.lifecycle.untidy import make_untidy

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits

LAST_RUN = 1_700_000_000  # the directory's last consolidation, as its lock's mtime says


@pytest.fixture
def store(alice, settings):
    settings.ANTHROPIC_API_KEY = ""
    store = resolve_store(alice, PROJECT, "private")
    make_untidy(Path(store.path))
    lock = Path(store.path) / LOCK_NAME
    lock.write_text("")
    os.utime(lock, (LAST_RUN, LAST_RUN))
    return store


def url(store) -> str:
    return f"/api/v1/stores/{store.pk}/consolidate"


def test_consolidate_now_through_the_api_proposes(alice_api, store):
    first = alice_api.post(url(store)).json()
    assert first["status"] == "queued" and first["run"]["trigger"] == "manual"
    assert alice_api.post(url(store)).json() == {**first, "status": "busy"}
    run_worker()
    run = ConsolidationRun.objects.get()
    assert (run.status, run.gate, run.outcome) == ("done", "passed", "proposed")
    assert Proposal.objects.exists()


def test_a_queued_run_cancelled_never_runs(alice_api, store):
    alice_api.post(url(store))
    cancelled = alice_api.delete(url(store)).json()
    assert (cancelled["status"], cancelled["run"]["outcome"]) == ("cancelled", "cancelled")
    run_worker()
    assert not Proposal.objects.exists()
    assert (Path(store.path) / LOCK_NAME).stat().st_mtime == LAST_RUN
    assert alice_api.delete(url(store)).status_code == 404  # nothing left to cancel


def test_a_running_run_cancelled_stops_and_puts_the_lock_back(alice_api, store):
    run_id = alice_api.post(url(store)).json()["run"]["id"]
    ConsolidationRun.objects.filter(pk=run_id).update(status="running")
    answer = alice_api.delete(url(store)).json()
    assert (answer["status"], answer["run"]["cancel_requested"]) == ("cancelling", True)
    # The worker takes the run up (as it had when the cancel came) and stops at its next step.
    ConsolidationRun.objects.filter(pk=run_id).update(status="queued")
    run_worker()
    run = ConsolidationRun.objects.get(pk=run_id)
    assert (run.status, run.outcome, run.gate) == ("done", "cancelled", "cancelled")
    assert not Proposal.objects.exists()
    assert (Path(store.path) / LOCK_NAME).stat().st_mtime == LAST_RUN


def test_another_persons_store_is_a_404(bob_api, store):
    assert bob_api.post(url(store)).status_code == 404
    assert bob_api.delete(url(store)).status_code == 404


def test_the_store_page_cancels_a_running_run_after_asking(alice, store):
    client = Client()
    assert client.login(username=alice.username, password=PASSWORD)
    client.post(reverse("consolidate_now", kwargs={"store_id": store.pk}))
    run = ConsolidationRun.objects.get()
    ConsolidationRun.objects.filter(pk=run.pk).update(status="running")
    cancel = reverse("consolidation_cancel", kwargs={"store_id": store.pk})
    page = client.get(reverse("store", kwargs={"store_id": store.pk})).content.decode()
    assert f'href="{cancel}">Cancel</a>' in page

    asked = client.get(cancel).content.decode()  # asks first: nothing cancelled yet
    assert f"Cancel consolidation #{run.pk}?" in asked and "stops at its next step" in asked
    assert not ConsolidationRun.objects.get().cancel_requested

    done = client.post(cancel, follow=True).content.decode()
    assert "stops at its next step" in done and "cancelling" in done
    assert f'href="{cancel}"' not in done
    ConsolidationRun.objects.filter(pk=run.pk).update(status="queued")  # the worker had it
    run_worker()
    assert ConsolidationRun.objects.get().outcome == "cancelled"
    assert not Proposal.objects.exists()
    assert (Path(store.path) / LOCK_NAME).stat().st_mtime == LAST_RUN
    assert "Nothing to cancel" in client.get(cancel).content.decode()
