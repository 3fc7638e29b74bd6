"""Where a session's summary shows (docs/design.md §14.10): `GET /api/v1/sessions/<id>` (its
owner's alone), the session page, past-context search; a failed model call that leaves the
cursor for the next update; and why lines were not kept, said in sentences."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memapp.lifecycle.models import Session, SessionSummary
from tests.admin_ui.conftest import client_for, text
from tests.coding_sessions import FIRST_REQUESTS, grow
from tests.lifecycle.conftest import run_worker, upload
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits


@pytest.fixture
def summarized(alice_api, settings) -> Session:
    settings.ANTHROPIC_API_KEY = ""
    t = Transcript()
    grow(t, 12_000, FIRST_REQUESTS)
    assert upload(alice_api, t)["summary"] == "queued"
    run_worker()
    return Session.objects.get()


def test_the_api_serves_a_session_with_its_summary_to_its_owner_only(
    summarized, alice_api, bob_api
):
    url = f"/api/v1/sessions/{summarized.session_id}"
    data = alice_api.get(url).json()
    assert data["entry_count"] == summarized.entry_count
    assert data["summary"]["selector"] == "offline"
    assert data["summary"]["through"] == summarized.entry_count
    assert data["summary"]["text"].startswith("# Session Title\nAdd rate limiting")
    assert data["skip_reasons"] == []
    assert bob_api.get(url).status_code == 404


def test_the_session_page_shows_the_summary(summarized, alice):
    page = client_for(alice).get(reverse("session", kwargs={"session_pk": summarized.pk}))
    assert page.status_code == 200
    shown = text(page)
    assert "Summary" in shown
    assert "written by memhub's rules (no API key)" in shown
    assert "widgets/ratelimit.py (read, edited)" in shown


def test_past_context_search_finds_the_summary_first(summarized, alice_api):
    hits = alice_api.get("/api/v1/search", {"q": "boundary twice"}).json()["sessions"]
    assert hits[0]["kind"] == "summary"
    assert hits[0]["url"].endswith(f"/sessions/{summarized.pk}/#summary")
    assert "**boundary twice**" in hits[0]["snippet"]  # the words, and the text as typed


def test_a_failed_model_call_keeps_the_cursor_for_the_next_update(alice_api, model):
    model.overloaded()
    t = Transcript()
    grow(t, 12_000, FIRST_REQUESTS)
    upload(alice_api, t)
    run_worker()
    summary = SessionSummary.objects.get()
    assert (summary.updates, summary.through, summary.attempts) == (0, 0, 2)
    assert "OverloadedError" in summary.error or "529" in summary.error

    model.answer_text("# Session Title\nRate limits\n# Worklog\n- sliding window")
    t.turn("Also log every 429.", "Will do.")
    upload(alice_api, t)
    run_worker()
    summary.refresh_from_db()
    assert (summary.updates, summary.error) == (1, "")
    assert summary.through == Session.objects.get().entry_count
    assert "Also log every 429." in model.requests[-1].body["messages"][0]["content"]
    assert FIRST_REQUESTS[0] in model.requests[-1].body["messages"][0]["content"]


def test_a_skipped_transcript_is_said_in_a_sentence(alice_api, alice):
    t = Transcript()
    upload(alice_api, t, entries=[], skipped={"transcript_outside_home": 1, "not_json": 2})
    session = Session.objects.get()
    page = text(client_for(alice).get(reverse("session", kwargs={"session_pk": session.pk})))
    assert (
        "The hook was given a transcript outside your home and Claude Code's config dir, so it "
        "did not read it." in page
    )
    assert "2 lines of the transcript were not JSON." in page
    reasons = alice_api.get(f"/api/v1/sessions/{t.session_id}").json()["skip_reasons"]
    assert len(reasons) == 2
