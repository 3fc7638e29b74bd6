"""Session summaries end to end (docs/design.md §14.10): real-shaped coding sessions of ~12,000 and
~40,000 tokens uploaded by the real Stop hook, the task worker writing the summary (with the
fake Messages API, or memhub's rules without a key), once and then incrementally from its
cursor; and the SessionStart hook handing it to a resumed or compacted session."""

from __future__ import annotations

import json
import time

import pytest
from django.core.management import call_command

from memapp.lifecycle.models import Session, SessionSummary
from memapp.memdir.session_summary import SECTIONS, SUMMARY_SYSTEM
from memapp.stores.flags import set_flag
from tests.client.conftest import Machine
from tests.coding_sessions import FIRST_REQUESTS, FIRST_TASK, LATER_REQUESTS, grow
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)

FIRST_SUMMARY = "\n".join(
    [
        "# Session Title",
        "Sliding-window rate limiting for the widgets API",
        "# Current State",
        "Counters moved to Redis; burst test fixed.",
        "# Worklog",
        "- added the sliding window",
    ]
)
SECOND_SUMMARY = FIRST_SUMMARY.replace("burst test fixed.", "limit now per project.")


def run_worker() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload")


@pytest.fixture
def a(machine_a, server) -> Machine:
    machine_a.login(server)
    return machine_a


def stop(machine: Machine, t: Transcript, path) -> None:
    payload = {
        "session_id": t.session_id,
        "transcript_path": str(path),
        "cwd": str(machine.checkout),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    result = machine.hook("stop", payload)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    deadline = time.monotonic() + 60  # a large backlog goes on in a detached process
    while time.monotonic() < deadline:
        session = Session.objects.filter(session_id=t.session_id).first()
        if session is not None and session.entry_count >= len(t.entries):
            return
        time.sleep(0.2)
    raise AssertionError("the transcript did not arrive")


def session_file(machine: Machine, t: Transcript):
    return machine.home / ".claude" / "projects" / "-src-widgets" / f"{t.session_id}.jsonl"


@pytest.fixture
def fake_model(settings):
    from tests.api.fake_anthropic import FakeAnthropic

    with FakeAnthropic() as server:
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = server.url
        settings.MEMHUB_EXTRACTION_TIMEOUT = 5.0
        set_flag("extraction", False)  # only the summary's request reaches the fake
        yield server


def test_a_model_writes_the_summary_once_then_updates_it_from_new_messages_only(a, fake_model):
    t = Transcript(cwd=str(a.checkout))
    n = grow(t, 12_000, FIRST_REQUESTS)
    path = t.write(session_file(a, t))
    fake_model.answer_text(FIRST_SUMMARY)
    stop(a, t, path)
    run_worker()

    session = Session.objects.get()
    assert 11_000 < session.tokens < 14_000
    summary = SessionSummary.objects.get()
    assert (summary.updates, summary.selector, summary.through) == (1, "llm", session.entry_count)
    assert summary.text.startswith("# Session Title\nSliding-window rate limiting")
    first_text = summary.text
    (first,) = fake_model.requests
    assert first.body["system"] == SUMMARY_SYSTEM
    assert "tools" not in first.body
    (message,) = first.body["messages"]
    assert "(none yet: this is the session's first summary)" in message["content"]
    assert f"[user] {FIRST_TASK}" in message["content"]

    stop(a, t, path)  # nothing new: no second request
    run_worker()
    assert len(fake_model.requests) == 1

    start = len(t.entries)
    grow(t, 28_000, LATER_REQUESTS, start=n)
    t.append(path, start)
    fake_model.answer_text(SECOND_SUMMARY)
    stop(a, t, path)
    run_worker()

    session.refresh_from_db()
    assert 38_000 < session.tokens < 44_000
    summary.refresh_from_db()
    assert (summary.updates, summary.through) == (2, session.entry_count)
    assert "limit now per project." in summary.text
    assert len(fake_model.requests) == 2
    update = fake_model.requests[1].body["messages"][0]["content"]
    assert first_text.strip() in update  # the current summary …
    users = [line for line in update.splitlines() if line.startswith("[user] ")]
    assert users == [f"[user] {request}" for request in LATER_REQUESTS]  # … and only new ones
    assert "Step 0 of ratelimit" not in update


def test_without_a_key_memhubs_rules_write_it_and_read_only_new_entries(a, settings):
    settings.ANTHROPIC_API_KEY = ""
    t = Transcript(cwd=str(a.checkout))
    n = grow(t, 12_000, FIRST_REQUESTS)
    path = t.write(session_file(a, t))
    stop(a, t, path)
    run_worker()
    summary = SessionSummary.objects.get()
    assert (summary.updates, summary.selector) == (1, "offline")
    first_through = summary.through
    assert "- `widgets/ratelimit.py` (read, edited)" in summary.text
    assert "test_burst_3 fails: the window counted the boundary twice" in summary.text

    start = len(t.entries)
    grow(t, 28_000, LATER_REQUESTS, start=n)
    t.append(path, start)
    stop(a, t, path)
    run_worker()
    summary.refresh_from_db()
    assert summary.updates == 2
    assert summary.through == Session.objects.get().entry_count > first_through
    worklog = summary.text.split("# Worklog\n")[1].splitlines()
    assert [line[8:] for line in worklog] == FIRST_REQUESTS + LATER_REQUESTS
    headings = [line[2:] for line in summary.text.splitlines() if line.startswith("# ")]
    assert headings == list(SECTIONS)


def test_a_short_session_has_no_summary_and_the_flag_turns_them_off(a, settings):
    settings.ANTHROPIC_API_KEY = ""
    t = Transcript(cwd=str(a.checkout))
    grow(t, 3_000, FIRST_REQUESTS)
    path = t.write(session_file(a, t))
    stop(a, t, path)
    run_worker()
    assert not SessionSummary.objects.filter(updates__gt=0).exists()

    set_flag("session_summary", False)
    start = len(t.entries)
    grow(t, 12_000, LATER_REQUESTS, start=100)
    t.append(path, start)
    stop(a, t, path)
    run_worker()
    assert not SessionSummary.objects.filter(updates__gt=0).exists()


@pytest.mark.parametrize("source", ["resume", "compact", "startup"])
def test_session_start_hands_a_resumed_or_compacted_session_its_summary(a, settings, source):
    settings.ANTHROPIC_API_KEY = ""
    t = Transcript(cwd=str(a.checkout))
    grow(t, 12_000, FIRST_REQUESTS)
    path = t.write(session_file(a, t))
    stop(a, t, path)
    run_worker()
    payload = {
        "session_id": t.session_id,
        "transcript_path": str(path),
        "cwd": str(a.checkout),
        "hook_event_name": "SessionStart",
        "source": source,
    }
    result = a.hook("session-start", payload)
    assert result.returncode == 0, result.stderr
    context = (
        json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        if result.stdout
        else ""
    )
    if source == "startup":
        assert "Summary of this session" not in context
        return
    assert "Summary of this session so far (kept by memhub):" in context
    assert "# Session Title\nAdd rate limiting to the widgets API" in context
    assert len(context) <= 10_000


def test_a_transcript_in_claude_config_dir_outside_home_arrives(a, tmp_path):
    config = tmp_path / "ci-config"
    a.extra_env["CLAUDE_CONFIG_DIR"] = str(config)
    t = Transcript(cwd=str(a.checkout))
    t.turn("Why are the integration tests slow?", "The fixtures rebuild the database.")
    path = t.write(config / "projects" / "-src-widgets" / f"{t.session_id}.jsonl")
    stop(a, t, path)
    session = Session.objects.get()
    assert (session.entry_count, session.skipped) == (2, {})
