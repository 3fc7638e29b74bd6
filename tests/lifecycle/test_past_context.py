"""Past-context search (docs/design.md §14.9, §24): one function over a person's own sessions and
the memories they may see, ranked by the rule the Search page ranks by (words, stems, synonyms),
with highlighted snippets; SQLite FTS5 finds the entries here, PostgreSQL's full-text search in
the PostgreSQL run. bob never sees alice's hits."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from memapp.lifecycle.models import Session, TranscriptEntry
from memapp.lifecycle.past_context import CANDIDATES, START, STOP, search_past_context
from memapp.lifecycle.sessions import check_with_gate
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project
from memapp.stores.projects import resolve_store
from tests.admin_ui.conftest import client_for
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT, upload
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(alice, bob, alice_api, bob_api):
    """alice: two sessions and a private memory, a team memory bob can see; bob: one session."""
    deploy = Transcript()
    deploy.turn("The deploy failed with a migration lock timeout", "Retrying the migration.")
    deploy.turn("remember that we deploy on Fridays", "Noted.")
    upload(alice_api, deploy)
    other = Transcript()
    other.turn("Rename the billing service", "Renamed billing-api to invoices.")
    upload(alice_api, other)
    private = resolve_store(alice, PROJECT, "private")
    write_memory(
        Path(private.path),
        "project_deploys.md",
        "Deploy day",
        "Deploys happen on Fridays after the migration check",
        "project",
        "Deploy on Fridays.\n",
    )
    rescan_store(private)
    team = resolve_store(alice, PROJECT, "team")
    Project.objects.get(key=PROJECT).members.add(bob)
    write_memory(Path(team.path), "reference_runbook.md", "Runbook", "Deploy runbook", "reference")
    rescan_store(team)
    bobs = Transcript()
    bobs.turn("bob's secret plan: deploy on Mondays instead", "Interesting.")
    upload(bob_api, bobs)
    check_with_gate(Session.objects.all())
    return {"deploy": deploy, "other": other, "bob": bobs}


def test_it_finds_sessions_and_memories_ranked_with_highlights(alice, history):
    result = search_past_context(alice, "deploy Fridays")
    assert [h.path for h in result.memories] == ["project_deploys.md", "reference_runbook.md"]
    assert result.memories[0].score > result.memories[1].score  # both words beat one
    sessions = result.sessions
    assert {h.agent_session_id for h in sessions} == {history["deploy"].session_id}
    assert [h.seq for h in sessions] == [3, 1]  # "deploy on Fridays", then "The deploy failed"
    assert f"{START}deploy{STOP}" in sessions[0].snippet
    assert f"{START}Fridays{STOP}" in sessions[0].snippet
    assert str(sessions[0].snippet_html).count("<mark>") == 2


def test_any_word_or_synonym_finds_and_part_of_a_word_still_does(alice, history):
    assert {h.seq for h in search_past_context(alice, "migra").sessions} == {1, 2}
    both = {h.agent_session_id for h in search_past_context(alice, "deploy billing").sessions}
    assert both == {history["deploy"].session_id, history["other"].session_id}
    hits = search_past_context(alice, "billing").sessions
    assert {h.agent_session_id for h in hits} == {history["other"].session_id}
    (rollout,) = search_past_context(alice, "rollout on Fridays").memories[:1]
    assert rollout.path == "project_deploys.md"  # "rollout" is a synonym of "deploy"
    assert search_past_context(alice, "quantum origami").empty


def test_an_entry_with_every_word_is_found_behind_many_newer_with_one(alice, alice_api):
    """The database hands the ranking its newest candidates: those holding every word first,
    so a hundred and more newer entries holding one word cannot crowd out the one that holds
    both (docs/design.md §14.9)."""
    both = Transcript()
    both.turn("The canary rollout of billing stalled at ten percent", "Paused the canary.")
    upload(alice_api, both)
    crowd = Transcript()
    for n in range(CANDIDATES // 2 + 10):  # two entries a turn, each naming a canary
        crowd.turn(f"Canary number {n} looks healthy", f"Canary {n} is fine.")
    upload(alice_api, crowd)
    check_with_gate(Session.objects.all())
    sessions = search_past_context(alice, "canary billing").sessions
    assert sessions[0].agent_session_id == both.session_id
    assert sessions[0].seq == 1
    assert f"{START}billing{STOP}" in sessions[0].snippet


def test_words_the_index_stems_its_own_way_are_found(alice, alice_api):
    """The database's stemmer is not the ranking's ("consistency" is FTS5's `consist`, which
    the ranking's `consistenc` does not begin): it is asked for the words as written, so it
    finds every form it joins (docs/design.md §14.9)."""
    notes = Transcript()
    notes.turn("Check the consistency of the replicas", "The flaky policies are gone.")
    upload(alice_api, notes)
    check_with_gate(Session.objects.all())
    assert [h.seq for h in search_past_context(alice, "consistency").sessions] == [1]
    assert [h.seq for h in search_past_context(alice, "replica consistency").sessions] == [1]
    assert [h.seq for h in search_past_context(alice, "flaky policy").sessions] == [2]
    assert [h.seq for h in search_past_context(alice, "replicas consist").sessions] == [1]


def test_bob_never_sees_alices_sessions_or_private_memories(bob, alice, history):
    result = search_past_context(bob, "deploy")
    assert [h.agent_session_id for h in result.sessions] == [history["bob"].session_id]
    assert [h.path for h in result.memories] == ["reference_runbook.md"]  # the team's only
    assert search_past_context(bob, "migration lock").empty
    assert search_past_context(alice, "Mondays").empty


def test_entries_not_yet_checked_for_secrets_are_not_searched(alice, alice_api, history):
    """New entries are checked as they are stored; one an older memhub stored unchecked is
    found once a task has checked it."""
    late = Transcript()
    late.turn("the kraken release is blocked", "ok")
    upload(alice_api, late)
    assert not search_past_context(alice, "kraken").empty
    TranscriptEntry.objects.update(gate_checked=False)
    assert search_past_context(alice, "kraken").empty
    check_with_gate(Session.objects.all())
    assert not search_past_context(alice, "kraken").empty


def _indexed_under(user) -> int:
    """How many entries SQLite's full-text index holds under `user` (its `owner` column)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM lifecycle_entry_fts WHERE lifecycle_entry_fts MATCH %s",
            [f'owner : "{user.pk}"'],
        )
        return cursor.fetchone()[0]


def test_forgotten_sessions_and_rewritten_memories_leave_the_index(alice, history):
    Session.objects.get(session_id=history["deploy"].session_id).delete()
    assert search_past_context(alice, "migration lock").sessions == []
    if connection.vendor == "sqlite":  # the index forgot them under their owner too
        assert _indexed_under(alice) == TranscriptEntry.objects.filter(session__owner=alice).count()
    private = resolve_store(alice, PROJECT, "private")
    (Path(private.path) / "project_deploys.md").unlink()
    rescan_store(private)
    assert search_past_context(alice, "Fridays after").empty


@pytest.mark.parametrize("query", ["", "   ", '"*^()', "AND OR NOT NEAR", "x" * 5000, "é ü 漢字"])
def test_odd_queries_never_break_it(alice, history, query):
    result = search_past_context(alice, query)
    assert result.memories is not None


def test_snippets_are_escaped_html(alice, alice_api):
    t = Transcript()
    t.turn("rollout only when load < 3 & queue > 2 <script>alert(1)</script>", "Noted.")
    upload(alice_api, t)
    check_with_gate(Session.objects.all())
    (hit,) = search_past_context(alice, "rollout queue").sessions
    html = str(hit.snippet_html)
    assert "<script>" not in html
    assert "load &lt; 3 &amp; <mark>queue</mark>" in html


def test_the_api_answers_with_links_and_bold_matches(alice_api, bob_api, history):
    answer = alice_api.get("/api/v1/search", {"q": "deploy Fridays"}).json()
    session = answer["sessions"][0]
    assert session["snippet"].count("**") == 4
    assert session["url"].endswith(f"#e{session['seq']}")
    assert "/sessions/" in session["url"]
    assert answer["memories"][0]["url"].endswith("/m/project_deploys.md")
    assert bob_api.get("/api/v1/search", {"q": "migration lock"}).json()["sessions"] == []
    assert alice_api.get("/api/v1/search").status_code == 400


@pytest.fixture
def slow_tests(alice, alice_api):
    """A session that asks why the tests are slow, and a memory that says so."""
    t = Transcript()
    t.turn("Why are the integration tests slow?", "The fixtures rebuild the database.")
    upload(alice_api, t)
    check_with_gate(Session.objects.all())
    private = resolve_store(alice, PROJECT, "private")
    write_memory(
        Path(private.path),
        "project_slow_tests.md",
        "Slow tests",
        "The test suite takes twelve minutes on CI",
        "project",
        "Run it with xdist.\n",
    )
    rescan_store(private)
    return t


@pytest.mark.parametrize("query", ["slow tests", "pytest speed"])
def test_one_search_through_every_door(alice, alice_api, slow_tests, query):
    """The function, GET /api/v1/search (memhub-agent search and MCP call them: tests/client,
    tests/mcp), the past-context page and the Search page all find the memory, and the session
    too; "pytest speed" through synonyms only."""
    result = search_past_context(alice, query)
    assert [h.path for h in result.memories] == ["project_slow_tests.md"]
    assert [h.seq for h in result.sessions] == [1]
    answer = alice_api.get("/api/v1/search", {"q": query}).json()
    assert [h["path"] for h in answer["memories"]] == ["project_slow_tests.md"]
    assert [h["seq"] for h in answer["sessions"]] == [1]
    page = client_for(alice).get(reverse("past_context"), {"q": query}).content.decode()
    assert "project_slow_tests.md" in page and "#e1" in page
    search_page = client_for(alice).get(reverse("search"), {"q": query}).content.decode()
    assert "project_slow_tests.md" in search_page


def test_an_unrelated_query_finds_nothing_through_any_door(alice, alice_api, slow_tests):
    assert search_past_context(alice, "quantum origami").empty
    answer = alice_api.get("/api/v1/search", {"q": "quantum origami"}).json()
    assert answer["memories"] == answer["sessions"] == []
    page = client_for(alice).get(reverse("past_context"), {"q": "quantum origami"})
    assert "Nothing matches" in page.content.decode()
    search_page = client_for(alice).get(reverse("search"), {"q": "quantum origami"})
    assert "No memories match." in search_page.content.decode()
