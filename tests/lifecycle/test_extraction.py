"""Extraction as a task (docs/design.md §14.4–§14.5), with the real `anthropic` SDK talking to a
fake Messages API on 127.0.0.1 that records each request: one forced tool call, the manifest,
only the messages after the cursor; Claude Code's gates; failures retried once then shown; the
cursor moving only with a stored proposal; without a key, explicit requests still caught."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from memapp.lifecycle.extraction import STALE_RUN
from memapp.lifecycle.models import ExtractionRun, Proposal, Session
from memapp.lifecycle.tasks import run_extraction_task
from memapp.stores.models import Event
from memapp.stores.projects import resolve_store
from tests.api.fake_anthropic import FakeAnthropic
from tests.conftest import write_memory
from tests.lifecycle.conftest import MEMORY_DIR, PROJECT, run_worker, upload
from tests.memdir.test_secret_rules import fake_tokens
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits


@pytest.fixture
def fake(settings):
    with FakeAnthropic() as server:
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = server.url
        settings.MEMHUB_EXTRACTION_TIMEOUT = 5.0
        yield server


@pytest.fixture
def private(alice):
    """alice's private store of the project, with one memory, and the project's team store."""
    store = resolve_store(alice, PROJECT, "private")
    write_memory(
        Path(store.path),
        "feedback_tests.md",
        "Real DB",
        "Integration tests hit a real database",
        "feedback",
        "Use the real database.\n\n**Why:** mocks hid a migration.\n**How to apply:** always.\n",
    )
    resolve_store(alice, PROJECT, "team")
    return store


def change(**fields) -> dict:
    return {
        "action": "create",
        "scope": "private",
        "file": "project_deploys.md",
        "name": "Deploy day",
        "description": "We deploy on Fridays",
        "type": "project",
        "body": "Deploys happen on Fridays.\n\n**Why:** the user said so.\n"
        "**How to apply:** plan releases for Friday.\n",
        "reason": "the user asked to remember it",
        **fields,
    }


def test_the_model_gets_one_forced_tool_call_the_manifest_and_only_new_messages(
    alice_api, fake, private
):
    t = Transcript()
    t.turn("Why are the integration tests slow?", "The fixtures rebuild the database.")
    fake.propose([])
    upload(alice_api, t)
    run_worker()
    start = len(t.entries)
    t.turn("remember that we deploy on Fridays", "Noted.")
    upload(alice_api, t, entries=t.entries[start:])
    run_worker()

    assert len(fake.requests) == 2
    request = fake.requests[1]
    assert request.path == "/v1/messages"
    body = request.body
    assert [tool["name"] for tool in body["tools"]] == ["propose_memory_changes"]
    assert body["tool_choice"] == {"type": "tool", "name": "propose_memory_changes"}
    text = body["messages"][0]["content"]
    assert "## Manifest of the private memory directory" in text
    assert "feedback_tests.md" in text and "Integration tests hit a real database" in text
    assert "## Manifest of the team memory directory" in text
    assert "[user] remember that we deploy on Fridays" in text
    assert "[user] Why are the integration tests slow?" not in text
    assert request.headers["authorization"] == "Bearer sk-test" or request.headers.get("x-api-key")


def test_a_good_answer_becomes_pending_proposals_per_store(alice_api, fake, private):
    t = Transcript()
    t.turn("remember that we deploy on Fridays; the whole team should know", "Noted.")
    fake.propose(
        [
            change(),
            change(scope="team", file="project_freeze.md", name="Freeze", description="Freeze"),
            change(
                action="update",
                file="feedback_tests.md",
                type="feedback",
                name="Real DB",
                description="Integration tests hit a real database, never mocks",
            ),
        ]
    )
    upload(alice_api, t)
    run_worker()
    proposals = {p.store.kind: p for p in Proposal.objects.select_related("store")}
    assert set(proposals) == {"private", "team"}
    private_changes = list(proposals["private"].changes.order_by("position"))
    assert [(c.action, c.key) for c in private_changes] == [
        ("create", "project_deploys.md"),
        ("update", "feedback_tests.md"),
    ]
    assert private_changes[0].base_checksum == ""
    assert private_changes[1].base_checksum.startswith("sha256:")
    assert proposals["private"].status == "pending"
    assert proposals["private"].sources[0]["lines"] == [1]
    assert not (Path(private.path) / "project_deploys.md").exists()  # nothing written yet
    run = ExtractionRun.objects.get()
    assert (run.outcome, run.selector, run.proposed) == ("proposed", "llm", 3)
    session = Session.objects.get()
    assert (session.extracted_through, session.turns_pending) == (2, 0)


def test_bad_changes_are_dropped_with_their_reasons_and_never_written(alice_api, fake, private):
    token = fake_tokens(9)["github-pat"]
    t = Transcript()
    t.turn("remember everything", "ok")
    fake.propose(
        [
            change(file="../../escape.md"),
            change(file="project_secret.md", body=f"push with {token}\n"),
            change(action="explode", file="x.md"),
            *[change(file=f"project_{n}.md") for n in range(500)],
        ]
    )
    upload(alice_api, t)
    run_worker()
    proposal = Proposal.objects.get()
    assert proposal.changes.count() == 20
    reasons = [d["reason"] for d in proposal.dropped]
    assert reasons[:3] == [
        "the file name is refused (dotdot)",
        "holds what looks like a secret (GitHub personal access token)",
        "unknown action 'explode'",
    ]
    assert reasons.count("over the cap of 20 changes") == 480
    assert token not in str(proposal.dropped)
    assert not any(Path(private.path).glob("project_*.md"))


@pytest.mark.parametrize("failure", ["overloaded", "timeout", "bad tool input"])
def test_a_failing_model_is_tried_once_more_then_the_run_fails_and_the_cursor_stays(
    alice_api, fake, private, settings, failure
):
    if failure == "overloaded":
        fake.overloaded()
    elif failure == "timeout":
        settings.MEMHUB_EXTRACTION_TIMEOUT = 1.0
        fake.propose([change()], delay=3.0)
    else:
        fake.answer_text("I would rather not call the tool.")
    t = Transcript()
    t.turn("remember that we deploy on Fridays", "Noted.")
    upload(alice_api, t)
    run_worker()
    run = ExtractionRun.objects.get()
    assert (run.status, run.outcome, run.attempts) == ("failed", "failed", 2)
    assert len(fake.requests) == 2
    assert {"overloaded": "Overloaded", "timeout": "Timeout", "bad tool input": "bad tool"}[
        failure
    ] in run.error
    assert Session.objects.get().extracted_through == 0
    event = Event.objects.get(kind="extraction_run")
    assert event.fields["outcome"] == "failed" and event.fields["error"]
    assert not Proposal.objects.exists()

    fake.propose([change()])  # the next run reads the same entries again
    t.turn("thanks", "You're welcome.")
    upload(alice_api, t, entries=t.entries[2:])
    run_worker()
    assert Session.objects.get().extracted_through == 4
    assert "remember that we deploy on Fridays" in fake.requests[-1].body["messages"][0]["content"]
    assert Proposal.objects.count() == 1


def test_a_session_where_the_agent_wrote_memory_itself_is_skipped(alice_api, fake, private):
    t = Transcript()
    t.user("remember that we deploy on Fridays")
    t.write_memory(f"{MEMORY_DIR}/project_deploys.md", "---\nname: Deploys\n---\nFridays.\n")
    t.assistant("Saved.")
    upload(alice_api, t)
    run_worker()
    assert fake.requests == []
    run = ExtractionRun.objects.get()
    assert run.outcome == "skipped"
    assert run.windows[0]["verdict"] == "memory_written"
    assert Session.objects.get().extracted_through == 4  # the cursor moved past it


def test_turns_without_user_prose_are_skipped(alice_api, fake, private):
    t = Transcript()
    t.user("<command-name>/compact</command-name>")
    call = t.tool_use("Bash", {"command": "ls"})
    t.tool_result(call, "README.md")
    upload(alice_api, t, final=True)
    run_worker()
    assert fake.requests == []
    assert Session.objects.get().extracted_through == 0  # no turn asked for a run
    t.turn("remember that we deploy on Fridays", "Noted.")
    fake.propose([])
    upload(alice_api, t, entries=t.entries[3:])
    run_worker()
    assert len(fake.requests) == 1


def test_requests_while_a_run_waits_or_runs_coalesce_into_one_trailing_run(
    alice_api, fake, private, settings
):
    first, second = Transcript(), Transcript()
    first.turn("remember that we deploy on Fridays", "Noted.")
    assert upload(alice_api, first)["extraction"] == "queued"
    second.turn("remember that staging is at staging.example.com", "Noted.")
    assert upload(alice_api, second)["extraction"] == "coalesced"  # served by the queued run
    # The model answers after 5 s, room for the two uploads below while the run waits on it,
    # well within the run's patience (a request it gives up on is asked again).
    settings.MEMHUB_EXTRACTION_TIMEOUT = 15.0
    fake.propose([change()], delay=5.0)
    first_run = ExtractionRun.objects.get()

    # The task itself, in a thread (the worker command needs the main thread for its signals).
    def run_first() -> None:
        try:
            run_extraction_task.call(first_run.pk)
        finally:
            connection.close()  # the thread's own: left open, PostgreSQL could not drop the test db

    busy = threading.Thread(target=run_first)
    busy.start()
    try:
        # Running and past reading its windows: the model has the request (it answers 5 s later).
        for _ in range(600):
            if fake.requests:
                break
            threading.Event().wait(0.05)
        assert len(fake.requests) == 1, "the first run never asked the model"
        assert ExtractionRun.objects.filter(status="running").exists()
        first.turn("and remember that the freeze starts 2026-03-20", "Noted.")
        assert upload(alice_api, first, entries=first.entries[2:])["extraction"] == "trailing"
        second.turn("please remember that Ana reviews the migrations", "Noted.")
        assert upload(alice_api, second, entries=second.entries[2:])["extraction"] == "coalesced"
    finally:
        busy.join(timeout=60)
    run_worker()  # the trailing run, which the first enqueued when it ended
    runs = list(ExtractionRun.objects.order_by("pk"))
    assert [(r.trailing, r.status) for r in runs] == [(False, "done"), (True, "done")]
    assert len(fake.requests) == 2
    later = fake.requests[1].body["messages"][0]["content"].split("## New messages")[1]
    assert "freeze starts" in later and "Ana reviews" in later
    assert "[user] remember that we deploy on Fridays" not in later
    assert {s.extracted_through for s in Session.objects.all()} == {4}


def test_a_queued_run_a_stopped_worker_lost_serves_no_request(alice_api, private):
    t = Transcript()
    t.turn("remember that we deploy on Fridays", "Noted.")
    assert upload(alice_api, t)["extraction"] == "queued"
    lost = ExtractionRun.objects.get()
    ExtractionRun.objects.filter(pk=lost.pk).update(
        created_at=timezone.now() - STALE_RUN - timedelta(minutes=1)
    )
    t.turn("remember that staging is at staging.example.com", "Noted.")
    assert upload(alice_api, t, entries=t.entries[2:])["extraction"] == "queued"  # not coalesced
    lost.refresh_from_db()
    assert lost.status == "failed"
    assert lost.error == "lost: the task worker stopped before it finished"
    assert ExtractionRun.objects.filter(status="queued").exclude(pk=lost.pk).count() == 1


def test_without_a_key_explicit_requests_are_still_proposed(alice_api, private, settings):
    settings.ANTHROPIC_API_KEY = ""
    t = Transcript()
    t.turn("The build is red again.", "Looking.")
    t.turn("Don't skip the migrations check again, remember that.", "Understood.")
    t.turn("remember that we deploy on Fridays", "Noted.")
    upload(alice_api, t)
    run_worker()
    proposal = Proposal.objects.get()
    changes = list(proposal.changes.order_by("position"))
    assert [(c.type, c.description) for c in changes] == [
        ("feedback", "Don't skip the migrations check."),
        ("project", "We deploy on Fridays."),  # a deploy day is the project's, not the user's
    ]
    assert [c.key for c in changes] == [  # named from the substance
        "feedback_no_skip_migrations_check.md",
        "project_friday_deploys.md",
    ]
    assert proposal.sources[0]["lines"] == [3, 5]
    assert ExtractionRun.objects.get().selector == "offline"


def test_a_session_end_asks_for_the_last_turns(alice_api, private, settings, alice):
    from memapp.stores.flags import set_flag

    settings.ANTHROPIC_API_KEY = ""
    set_flag("extraction_every_n_turns", 5)
    t = Transcript()
    t.turn("remember that we deploy on Fridays", "Noted.")
    assert upload(alice_api, t)["extraction"] == "waiting"
    assert upload(alice_api, t, entries=[], final=True)["extraction"] == "queued"
    run_worker()
    assert Proposal.objects.count() == 1
