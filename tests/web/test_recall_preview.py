"""“What would my agent recall?”: the answer an agent would get, with reasons and freshness
notes, which itself counts as no recall."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.cache import cache
from django.urls import reverse

from memapp.stores.events import flush_events
from memapp.stores.models import Event, RecallStat
from memapp.stores.projects import resolve_store
from memapp.stores.recall import recall_for
from memapp.stores.recall_stats import flush_recall_counts
from tests.conftest import write_memory
from tests.web.memory_pages import text

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""
    cache.clear()


@pytest.fixture
def private(alice):
    store = resolve_store(alice, "acme/app", "private")
    root = Path(store.path)
    write_memory(
        root,
        "project_flaky_ci.md",
        "Flaky CI job",
        "The nightly integration job fails now and then",
        "project",
        "Retry once.\n",
    )
    old = time.time() - 12 * 86_400
    os.utime(root / "project_flaky_ci.md", (old, old))
    write_memory(root, "user_role.md", "Role", "Alice is a backend engineer", "user")
    return store


def preview(client, store, query: str, **extra):
    params = {"project": store.pk, "query": query, "scope": "both", **extra}
    return client.get(reverse("recall_preview") + "?" + urlencode(params))


def test_the_page_shows_what_recall_returns_with_its_reason_and_freshness_note(
    client, private, alice
):
    client.force_login(alice)
    response = preview(client, private, "why are the tests flaky?")
    page = text(response)
    assert "1 memory recalled" in page
    assert "1. Flaky CI job private" in page
    assert "Why matches: flaky" in page
    assert "This memory is 12 days old." in page
    assert "Memory: project_flaky_ci.md:" in page
    assert "Chosen offline (no model) from 2 candidates." in page
    assert "&lt;system-reminder&gt;" in response.content.decode()  # escaped, shown as text


def test_a_query_nothing_fits_says_the_agent_gets_nothing(client, private, alice):
    client.force_login(alice)
    page = text(preview(client, private, "write a haiku about autumn"))
    assert "Nothing recalled" in page
    assert "the agent gets none" in page


def test_a_preview_counts_as_no_recall(client, private, alice):
    client.force_login(alice)
    preview(client, private, "flaky tests")
    flush_events()
    flush_recall_counts()
    assert not Event.objects.filter(kind="recall").exists()
    assert not RecallStat.objects.exists()
    # The agent's own recall in a session is not shortened by the preview either.
    outcome = recall_for(alice, private, "flaky tests", session_id="s1")
    assert [m["name"] for m in outcome.memories] == ["Flaky CI job"]


def test_recall_counts_what_it_returns(client, private, alice):
    recall_for(alice, private, "flaky tests")
    recall_for(alice, private, "why is the CI job flaky")
    flush_recall_counts()
    stat = RecallStat.objects.get()
    assert (stat.path, stat.count) == ("project_flaky_ci.md", 2)
    client.force_login(alice)
    page = text(client.get(reverse("memory", args=[private.pk, "project_flaky_ci.md"])))
    assert "Recalled 2 times, last 0 minutes ago" in page


def test_only_your_own_projects_are_offered(client, private, bob):
    client.force_login(bob)
    response = preview(client, private, "flaky tests")
    assert "You have no private memory in any project yet" in text(response)
    assert "Flaky CI job" not in text(response)
