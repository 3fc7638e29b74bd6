"""`memhub-agent hook claude-code stop|session-end`: the real console script reads the
transcript Claude Code names, uploads the entries after the session's cursor, prints nothing and
answers within a second, also when memhub is down (then the next hook catches up); a large
backlog goes on in a detached process. And `memhub-agent search`."""

from __future__ import annotations

import json
import time

import pytest

from memapp.lifecycle.models import Session, TranscriptEntry
from memapp.lifecycle.sessions import check_with_gate
from tests.client.conftest import Machine
from tests.memdir.test_secret_rules import fake_tokens
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)


def stop_payload(machine: Machine, transcript: Transcript, path, event: str = "Stop") -> dict:
    """What Claude Code 2.1.328 sends a Stop (or SessionEnd) hook on stdin."""
    payload = {
        "session_id": transcript.session_id,
        "transcript_path": str(path),
        "cwd": str(machine.checkout),
        "hook_event_name": event,
    }
    if event == "Stop":
        payload["stop_hook_active"] = False
    else:
        payload["reason"] = "exit"
    return payload


def run_stop(machine: Machine, transcript: Transcript, path, event: str = "stop"):
    name = "Stop" if event == "stop" else "SessionEnd"
    started = time.monotonic()
    result = machine.hook(event, stop_payload(machine, transcript, path, name))
    return result, time.monotonic() - started


@pytest.fixture
def a(machine_a, server) -> Machine:
    machine_a.login(server)
    return machine_a


@pytest.fixture
def session(a) -> tuple[Transcript, object]:
    t = Transcript(cwd=str(a.checkout))
    t.snapshot()
    t.turn("Why are the integration tests slow?", "The fixtures rebuild the database.")
    t.turn("remember that we deploy on Fridays", "Noted.")
    path = t.write(a.home / ".claude" / "projects" / "-src-widgets" / f"{t.session_id}.jsonl")
    return t, path


def test_the_stop_hook_uploads_the_new_entries_and_prints_nothing(a, session):
    transcript, path = session
    result, _ = run_stop(a, transcript, path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    stored = Session.objects.get()
    assert stored.session_id == transcript.session_id
    assert stored.entry_count == 4
    assert stored.skipped == {}  # the file-history snapshot is the agent's bookkeeping
    assert stored.memory_dir == str(a.memory_dir)
    assert stored.project.key == "acme/widgets"

    start = len(transcript.entries)
    transcript.turn("and the unit tests?", "They are fine.")
    transcript.append(path, start)
    run_stop(a, transcript, path)
    assert Session.objects.get().entry_count == 6
    assert TranscriptEntry.objects.count() == 6  # nothing sent twice


def test_secrets_never_leave_the_machine(a, session):
    transcript, path = session
    token = fake_tokens(31)["github-pat"]
    start = len(transcript.entries)
    transcript.user(f"push with GH_TOKEN={token}")
    transcript.append(path, start)
    run_stop(a, transcript, path)
    check_with_gate(Session.objects.all())
    stored = " ".join(TranscriptEntry.objects.values_list("text", flat=True))
    assert token not in stored
    assert "[REDACTED:GitHub personal access token]" in stored


def test_when_memhub_is_down_the_hook_is_silent_and_the_next_one_catches_up(
    a, session, closed_port, server
):
    transcript, path = session
    a.default_budget()
    a.extra_env["MEMHUB_URL"] = f"http://127.0.0.1:{closed_port}"
    result, elapsed = run_stop(a, transcript, path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert a.without_load(elapsed) < 1.0
    assert not Session.objects.exists()
    del a.extra_env["MEMHUB_URL"], a.extra_env["MEMHUB_HOOK_TIMEOUT"]
    run_stop(a, transcript, path)
    assert Session.objects.get().entry_count == 4


def test_a_session_that_ended_while_memhub_was_down_arrives_with_the_next_sessions_hook(
    a, session, closed_port, server
):
    """Its Stop and SessionEnd found memhub down, and no hook of it comes again: the next
    hook that reaches memhub, of another session, hands it to a detached uploader."""
    transcript, path = session
    a.extra_env["MEMHUB_URL"] = f"http://127.0.0.1:{closed_port}"
    run_stop(a, transcript, path)
    result, _ = run_stop(a, transcript, path, event="session-end")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not Session.objects.exists()
    del a.extra_env["MEMHUB_URL"]

    later = Transcript(cwd=str(a.checkout))
    later.turn("And the unit tests?", "They are fine.")
    later_path = later.write(path.parent / f"{later.session_id}.jsonl")
    run_stop(a, later, later_path)

    deadline = time.monotonic() + 60
    while (
        time.monotonic() < deadline
        and not Session.objects.filter(
            session_id=transcript.session_id, ended_at__isnull=False
        ).exists()
    ):
        time.sleep(0.2)
    ended = Session.objects.get(session_id=transcript.session_id)
    assert ended.entry_count == 4 and ended.ended_at is not None
    owed = a.config_dir / "transcripts" / "owed"
    while time.monotonic() < deadline and any(owed.iterdir()):
        time.sleep(0.2)
    assert not any(owed.iterdir())  # paid: not handed on again


def test_a_server_too_slow_for_the_budget_gets_the_batch_from_a_detached_process(
    a, session, server, slow_proxy
):
    """The first batch reached the server but its answer came after the hook's budget: the
    hook still ends in time, and a detached process sends the batch again (the server keeps
    each entry once)."""
    transcript, path = session
    a.default_budget()
    a.extra_env["MEMHUB_URL"] = slow_proxy(server.url, 1.5)
    result, elapsed = run_stop(a, transcript, path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert a.without_load(elapsed) < 1.0
    cursors = a.config_dir / "transcripts"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _saved_offset(cursors):
        time.sleep(0.2)
    assert _saved_offset(cursors) == path.stat().st_size
    assert Session.objects.get().entry_count == 4


def _saved_offset(cursors) -> int | None:
    saved = next(cursors.glob("*.json"), None)
    return json.loads(saved.read_text())["offset"] if saved else None


def test_a_hanging_server_costs_at_most_a_second(a, session, silent_server):
    transcript, path = session
    a.default_budget()
    a.extra_env["MEMHUB_URL"] = silent_server
    result, elapsed = run_stop(a, transcript, path)
    assert (result.returncode, result.stdout) == (0, "")
    assert a.without_load(elapsed) < 1.0


@pytest.mark.parametrize("where", ["outside", "missing"])
def test_a_transcript_outside_home_or_missing_is_skipped_and_counted(a, session, tmp_path, where):
    transcript, path = session
    if where == "outside":
        outside = tmp_path / "elsewhere" / "t.jsonl"
        outside.parent.mkdir()
        outside.write_text(path.read_text())
        path = outside
    else:
        path = a.home / "nope.jsonl"
    result, _ = run_stop(a, transcript, path)
    assert (result.returncode, result.stdout) == (0, "")
    stored = Session.objects.get()
    assert stored.entry_count == 0
    reason = "transcript_outside_home" if where == "outside" else "transcript_missing"
    assert stored.skipped == {reason: 1}


def test_a_large_backlog_goes_on_in_a_detached_process(a, server):
    t = Transcript(cwd=str(a.checkout))
    for n in range(1500):
        t.turn(f"question {n}: " + "why? " * 60, f"answer {n}: " + "because " * 60)
    path = t.write(a.home / ".claude" / "projects" / "-src-widgets" / f"{t.session_id}.jsonl")
    a.default_budget()
    result, elapsed = run_stop(a, t, path)
    assert (result.returncode, result.stdout) == (0, "")
    assert a.without_load(elapsed) < 1.0
    cursors = a.config_dir / "transcripts"  # the detached process saves it once all is in
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _saved_offset(cursors) != path.stat().st_size:
        time.sleep(0.2)
    assert _saved_offset(cursors) == path.stat().st_size
    assert Session.objects.get().entry_count == 3000


def test_session_end_marks_the_session_ended(a, session):
    transcript, path = session
    run_stop(a, transcript, path)
    result, _ = run_stop(a, transcript, path, event="session-end")
    assert (result.returncode, result.stdout) == (0, "")
    assert Session.objects.get().ended_at is not None


def test_a_session_end_while_a_background_upload_runs_still_ends_the_session(tmp_path, monkeypatch):
    """The uploader a Stop hook left running (a large backlog, a slow server) holds the
    session's lock and was not started as final: the SessionEnd that found it busy was lost,
    and the session never ended (its last turns waited for extraction forever)."""
    from memapp.client import transcripts

    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    path = tmp_path / "t.jsonl"
    path.write_text("")
    spawned = []
    monkeypatch.setattr(transcripts, "_spawn", lambda *args: spawned.append(args))
    payload = {"session_id": "s-1", "transcript_path": str(path)}
    cursor = transcripts.Cursor.load(env, "s-1", path.resolve())
    with cursor.locked(wait=False) as mine:  # the Stop hook's uploader
        assert mine
        for final in (False, True):
            transcripts.upload_from_hook(
                payload, None, {}, "/src", env, time.monotonic() + 5, final=final
            )
    assert [(args[0], args[3]) for args in spawned] == [("s-1", True)]


def test_search_prints_the_best_matches_with_links(a, session):
    transcript, path = session
    run_stop(a, transcript, path)
    check_with_gate(Session.objects.all())
    result = a.run("search", "deploy Fridays")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Memories (0)"
    assert lines[1] == "Sessions (1)"
    assert "remember that we **deploy** on **Fridays**" in lines[3]
    assert lines[4].strip().endswith("#e3")
    as_json = json.loads(a.run("search", "deploy", "--json").stdout)
    assert as_json["sessions"][0]["seq"] == 3
    assert a.run("search", "kraken").stdout == "nothing matches 'kraken'\n"
    for query in ("slow tests", "pytest speed"):  # "pytest speed" through synonyms only
        found = json.loads(a.run("search", query, "--json").stdout)["sessions"]
        assert "integration tests slow" in found[0]["snippet"].replace("**", ""), query


def test_a_session_whose_upload_keeps_failing_is_given_up_after_five_tries(tmp_path):
    """An owed session memhub refuses (not only one it cannot reach) is not handed on by
    every hook forever; however long memhub was down before, and a SessionEnd once owed
    stays final."""
    from memapp.client.transcripts import MAX_ATTEMPTS, owe

    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    owed = tmp_path / "memhub" / "transcripts" / "owed"
    transcript = tmp_path / "t.jsonl"
    owe(env, "s-1", transcript, "/src", True, "claude-code")
    for _ in range(MAX_ATTEMPTS * 2):  # memhub down for many turns: the hooks' failures
        owe(env, "s-1", transcript, "/src", False, "claude-code")
    [marker] = owed.iterdir()
    assert json.loads(marker.read_text())["final"] is True
    for _ in range(MAX_ATTEMPTS - 1):
        owe(env, "s-1", transcript, "/src", False, "claude-code", retried=True)
    assert json.loads(marker.read_text())["attempts"] == MAX_ATTEMPTS - 1
    owe(env, "s-1", transcript, "/src", False, "claude-code", retried=True)
    assert not any(owed.iterdir())


def test_an_owed_session_handed_on_is_not_handed_on_again_at_once(tmp_path, monkeypatch):
    """Each hook that reaches memhub would otherwise start another uploader for it while the
    first still runs."""
    from memapp.client import transcripts

    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    spawned = []
    monkeypatch.setattr(transcripts, "_spawn", lambda *args: spawned.append(args[0]))
    transcripts.owe(env, "s-1", tmp_path / "t.jsonl", "/src", True, "claude-code")
    transcripts.catch_up(env, "s-2")
    transcripts.catch_up(env, "s-2")
    assert spawned == ["s-1"]
    transcripts.owe(env, "s-1", tmp_path / "t.jsonl", "/src", True, "claude-code", retried=True)
    transcripts.catch_up(env, "s-2")  # its uploader failed: handed on again
    assert spawned == ["s-1", "s-1"]
