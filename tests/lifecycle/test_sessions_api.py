"""`POST /api/v1/sessions/<id>/entries`: idempotent by entry, redacted before it is stored,
private to its owner, bad input skipped and counted; forgetting and pruning sessions."""

from __future__ import annotations

import datetime

import pytest
from django.urls import reverse
from django.utils import timezone

from memapp.lifecycle.models import Session, TranscriptEntry
from memapp.lifecycle.past_context import search_past_context
from memapp.lifecycle.sessions import check_with_gate, prune_sessions
from memapp.stores.models import Project
from tests.lifecycle.conftest import upload
from tests.memdir.test_secret_rules import fake_tokens
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def transcript() -> Transcript:
    t = Transcript()
    t.snapshot()
    t.turn("Why are the integration tests slow?", "The fixtures rebuild the database.")
    call = t.tool_use("Bash", {"command": "pytest -x --durations=3"})
    t.tool_result(call, "3 slowest: 12.1s setup")
    t.summary("Slow integration tests")
    return t


def test_entries_are_stored_once_each_and_counted(alice_api, transcript):
    answer = upload(alice_api, transcript)
    assert answer["received"] == 6
    assert answer["stored"] == 5
    assert answer["skipped"] == {}  # the file-history snapshot is the agent's bookkeeping
    assert answer["extraction"] == "queued"
    again = upload(alice_api, transcript)
    assert (again["stored"], again["duplicates"]) == (0, 5)
    session = Session.objects.get()
    assert session.entry_count == 5
    assert session.turn_count == 1
    assert session.title == "Slow integration tests"
    assert session.skipped == {}
    assert list(session.entries.values_list("seq", flat=True)) == [1, 2, 3, 4, 5]


def test_new_entries_continue_the_sequence(alice_api, transcript):
    upload(alice_api, transcript)
    start = len(transcript.entries)
    transcript.turn("And the unit tests?", "They are fine.")
    answer = upload(alice_api, transcript, entries=transcript.entries[start:])
    assert answer["stored"] == 2
    rows = TranscriptEntry.objects.order_by("seq")
    assert [r.seq for r in rows][-2:] == [6, 7]
    assert rows.last().prose == "They are fine."


def test_planted_secrets_are_never_stored_in_clear(alice_api):
    tokens = fake_tokens(21)
    t = Transcript()
    t.user(f"Use STRIPE_KEY={tokens['stripe-access-token']} for the test account")
    bearer = f"curl -H 'Authorization: Bearer {tokens['github-pat']}'"
    call = t.tool_use("Bash", {"command": bearer})
    t.tool_result(call, 'db:\n  password = "hunterfoo-but-longer"\n')
    answer = upload(alice_api, t)
    assert answer["redacted"] == 3  # the two tokens, and the password detect-secrets finds
    stored = " ".join(f"{e.prose} {e.tools} {e.text}" for e in TranscriptEntry.objects.all())
    for value in (tokens["stripe-access-token"], tokens["github-pat"], "hunterfoo-but-longer"):
        assert value not in stored
    assert "[REDACTED:Stripe secret key]" in stored
    assert "[REDACTED:Secret Keyword]" in stored
    assert Session.objects.get().redactions == 3


def test_a_title_is_redacted_by_both_layers_before_it_is_shown(alice_api, client, alice):
    """The title is on the Sessions page at once: a key only detect-secrets knows (an AWS key
    of few distinct characters) in the summary must not be in it."""
    t = Transcript()
    t.turn("What did we set up?", "The deploy user.")
    t.summary("Deploy user set up with AKIABCCCCCCCCCCCCCC5")
    upload(alice_api, t)
    session = Session.objects.get()
    assert session.title == "Deploy user set up with [REDACTED:AWS Access Key]"
    client.force_login(alice)
    assert "AKIABCCCCCCCCCCCCCC5" not in client.get(reverse("sessions")).content.decode()
    across = Transcript()  # a password the title's cut at 300 characters would split
    across.turn("x", "y")
    across.summary("w" * 280 + ' password = "hJ8sK2pQ9zX4mN7bV5cL"')
    upload(alice_api, across)
    title = Session.objects.get(session_id=across.session_id).title
    assert "hJ8sK" not in title and len(title) <= 300


def test_entries_stored_before_ingest_checked_them_wait_for_the_second_layer(alice_api, transcript):
    """Entries of an older memhub, stored before ingest ran detect-secrets, are read only once
    a task has checked them."""
    upload(alice_api, transcript)
    assert not TranscriptEntry.objects.filter(gate_checked=False).exists()
    TranscriptEntry.objects.update(gate_checked=False)
    check_with_gate(Session.objects.all())
    assert not TranscriptEntry.objects.filter(gate_checked=False).exists()


def test_sessions_are_private_to_their_owner(alice_api, bob_api, bob, transcript):
    upload(alice_api, transcript)
    Project.objects.get().members.add(bob)
    other = Transcript(session_id=transcript.session_id)
    other.turn("bob's own question", "bob's answer")
    upload(bob_api, other)  # the same session id is a different session for bob
    assert Session.objects.count() == 2
    assert bob_api.delete(f"/api/v1/sessions/{transcript.session_id}").status_code == 204
    assert Session.objects.get().owner.username == "alice"
    assert bob_api.delete(f"/api/v1/sessions/{transcript.session_id}").status_code == 404


def test_forgetting_a_session_deletes_its_transcript(alice_api, transcript):
    upload(alice_api, transcript)
    assert alice_api.delete(f"/api/v1/sessions/{transcript.session_id}").status_code == 204
    assert not Session.objects.exists()
    assert not TranscriptEntry.objects.exists()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"project": "acme/widgets", "entries": "not a list"}, "invalid"),
        ({"project": "acme/widgets"}, "invalid"),
        ({"project": "../etc", "entries": []}, "invalid"),
        ({"project": "acme/widgets", "entries": [], "skipped": {"x": -1}}, "invalid"),
        ({"project": "acme/widgets", "entries": [], "surprise": 1}, "invalid"),
    ],
)
def test_bad_requests_are_refused_with_the_api_error_shape(alice_api, body, code):
    response = alice_api.post("/api/v1/sessions/abc-123/entries", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert not Session.objects.exists()


def test_a_bad_session_id_is_refused(alice_api):
    body = {"project": "acme/widgets", "entries": []}
    response = alice_api.post("/api/v1/sessions/..%2F..%2Fx/entries", body, format="json")
    assert response.status_code in (400, 404)
    assert not Session.objects.exists()


def test_odd_entries_are_skipped_and_counted_never_a_crash(alice_api):
    t = Transcript()
    t.turn("hello", "hi")
    odd = [
        "a string",
        42,
        None,
        {"type": "progress", "data": {}},  # bookkeeping: passed over, not counted
        {"type": "telemetry", "data": {}},
        {"type": "user", "message": "not an object"},
        {"type": "assistant", "message": {"content": [None, 3, {"type": "weird"}]}},
        {"type": "user", "uuid": "u-1", "message": {"content": "\x00\x01 binary-ish"}},
    ]
    answer = upload(alice_api, t, entries=t.entries + odd, skipped={"not_json": 2})
    assert answer["stored"] == 5
    assert answer["skipped"] == {"not_object": 3, "unknown_type": 1, "not_json": 2}


def test_sessions_idle_past_the_retention_are_pruned(alice_api, transcript):
    upload(alice_api, transcript)
    old = Transcript()
    old.turn("an old question", "an old answer")
    upload(alice_api, old)
    Session.objects.filter(session_id=old.session_id).update(
        last_entry_at=timezone.now() - datetime.timedelta(days=31)
    )
    assert prune_sessions(30) == 1
    assert list(Session.objects.values_list("session_id", flat=True)) == [transcript.session_id]
    assert prune_sessions(0) == 0


def test_a_thousand_entries_in_one_upload(alice_api):
    t = Transcript()
    for n in range(500):
        t.turn(f"question {n}", f"answer {n}")
    answer = upload(alice_api, t)
    assert answer["stored"] == 1000
    assert Session.objects.get().turn_count == 500


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_the_background_clock_prunes_old_sessions_daily(alice_api, settings):
    from tests.conftest import background_tick

    settings.MEMHUB_TRANSCRIPT_RETENTION_DAYS = 30
    old = Transcript()
    old.turn("an old question", "an old answer")
    upload(alice_api, old)
    Session.objects.update(last_entry_at=timezone.now() - datetime.timedelta(days=45))
    assert 1 in background_tick()  # prune_sessions_task's result: one session went
    assert not Session.objects.exists()


def test_every_value_of_the_new_shapes_is_redacted_on_every_surface(alice, alice_api, client):
    """Issue 23: a second value on a line, an environment prefix of a Bash call, credentials on
    command lines; never in the stored entries, the search index, the session page or
    GET /api/v1/search."""
    secret_key = "Zq3mK8pL2vN7xR4tW9yB1cF6hJ0sD5gA8eU3iO7w"
    values = [secret_key, "AKIAZ7Q2M4N6P3R5T7V2", "Sup3r$ecretPa55!", "dckr_pat_Qm7Lx2Vt9Pz4"]
    values += ["Hx7pq2Lm9w", "Xk9mQ2vL7pTzQq"]
    t = Transcript()
    t.user('password = "[REDACTED:Password in quotes]" export DB_PASSWORD=Sup3r$ecretPa55!')
    command = f"AWS_ACCESS_KEY_ID=AKIAZ7Q2M4N6P3R5T7V2 AWS_SECRET_ACCESS_KEY={secret_key} aws s3 ls"
    t.tool_result(t.tool_use("Bash", {"command": command}), "2026-01-05 kraken-backups")
    t.tool_use("Bash", {"command": "docker login -u deploy -p dckr_pat_Qm7Lx2Vt9Pz4 kraken.io"})
    t.assistant("kraken notes:\n- [x](x.md) — ok\n- password: Xk9mQ2vL7pTzQq\n")
    t.user("then curl -u deploy:Hx7pq2Lm9w https://kraken.example.com")
    upload(alice_api, t)
    check_with_gate(Session.objects.all())

    session = Session.objects.get()
    stored = " ".join(f"{e.prose} {e.tools} {e.text}" for e in session.entries.all())
    client.force_login(alice)
    page = client.get(reverse("session", args=[session.pk])).content.decode()
    found = alice_api.get("/api/v1/search", {"q": "kraken"}).content.decode()
    assert "kraken" in page and "kraken" in found  # the surfaces show these entries
    for surface in (stored, page, found):
        assert [value for value in values if value in surface] == []
    for value in ("Sup3r", "Zq3mK8pL2vN7xR4tW9yB1cF6hJ0sD5gA8eU3iO7w", "Hx7pq2Lm9w"):
        assert search_past_context(alice, value).empty, value
