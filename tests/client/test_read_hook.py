"""PostToolUse: a memory file the agent reads itself gets the staleness note it would get had it
been recalled, and counts as shown to the session, so recall does not offer it again
(docs/design.md §8, §16)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memapp.memdir.freshness import staleness_note
from tests.client.conftest import Machine, topic

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "7d3f1e2a-9b8c-4d6e-a1f0-2c3b4a5d6e7f"
DAY = 86_400


def read(machine: Machine, path: Path, tool: str = "Read") -> str:
    """The PostToolUse hook after the agent used `tool` on `path`: the context it adds."""
    payload = {
        "session_id": SESSION,
        "transcript_path": str(machine.home / "t.jsonl"),
        "cwd": str(machine.checkout),
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {"file_path": str(path)},
        "tool_response": {"type": "text", "file": {"filePath": str(path)}},
    }
    result = machine.hook("post-tool-use", payload)
    assert result.returncode == 0, result.stderr
    if not result.stdout:
        return ""
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PostToolUse"
    return output["additionalContext"]


def prompt(machine: Machine, text: str) -> str:
    payload = {
        "session_id": SESSION,
        "cwd": str(machine.checkout),
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }
    return machine.hook("user-prompt-submit", payload).stdout


def age(path: Path, days: int) -> int:
    stamp = time.time() - days * DAY - 3600
    os.utime(path, (stamp, stamp))
    return int(stamp * 1000)


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    machine_a.write("MEMORY.md", "- [Real DB](feedback_db.md) — integration tests, no mocks\n")
    machine_a.write(
        "feedback_db.md",
        topic("Real DB", "Integration tests must hit a real database", body="Real DB.\n"),
    )
    machine_a.sync()
    return machine_a


def test_reading_an_old_memory_adds_the_staleness_note(a):
    path = a.memory_dir / "feedback_db.md"
    mtime_ms = age(path, 12)

    text = read(a, path)

    assert text == staleness_note(mtime_ms)
    assert text.startswith("This memory is 12 days old.")


def test_a_memory_saved_yesterday_needs_no_note(a):
    path = a.memory_dir / "feedback_db.md"
    age(path, 1)

    assert read(a, path) == ""


def test_a_memory_read_is_not_recalled_again_in_the_session(a):
    read(a, a.memory_dir / "feedback_db.md")

    assert prompt(a, "should integration tests hit a real database?") == ""


def test_the_read_counts_for_this_session_only(a):
    """The control of the test above: another session is offered the memory."""
    read(a, a.memory_dir / "feedback_db.md")

    payload = {
        "session_id": "another-session",
        "cwd": str(a.checkout),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "should integration tests hit a real database?",
    }
    assert "feedback_db.md" in a.hook("user-prompt-submit", payload).stdout


@pytest.mark.parametrize(
    "where", ["outside the memory dir", "the index", "another tool", "a relative path"]
)
def test_only_a_read_of_a_memory_topic_file_counts(a, where):
    path = a.memory_dir / "feedback_db.md"
    age(path, 12)
    age(a.memory_dir / "MEMORY.md", 12)
    (a.checkout / "README.md").write_text("# widgets\n")
    age(a.checkout / "README.md", 12)
    cases = {
        "outside the memory dir": (a.checkout / "README.md", "Read"),
        "the index": (a.memory_dir / "MEMORY.md", "Read"),
        "another tool": (path, "Edit"),
        "a relative path": (Path("feedback_db.md"), "Read"),
    }
    target, tool = cases[where]

    assert read(a, target, tool) == ""
    assert "feedback_db.md" in prompt(a, "should integration tests hit a real database?")


def test_an_agents_own_memory_counts_too(a):
    agent = a.home / ".claude" / "agent-memory" / "reviewer"
    agent.mkdir(parents=True)
    style = agent / "style.md"
    style.write_text(topic("Style", "Style guide lives in docs/style.md", "reference"))
    mtime_ms = age(style, 40)

    assert read(a, style) == staleness_note(mtime_ms)


def test_the_note_needs_no_server(machine_a, closed_port):
    machine_a.extra_env.update(MEMHUB_URL=f"http://127.0.0.1:{closed_port}", MEMHUB_TOKEN="mh_x")
    machine_a.default_budget()
    path = machine_a.write("feedback_db.md", topic("Real DB", "Tests hit a real database"))
    mtime_ms = age(path, 3)
    started = time.monotonic()

    assert read(machine_a, path) == staleness_note(mtime_ms)
    assert machine_a.without_load(time.monotonic() - started) < 1.0


def grep(machine: Machine, response: dict) -> str:
    """The PostToolUse hook after a `Grep` whose tool response is `response`."""
    payload = {
        "session_id": SESSION,
        "cwd": str(machine.checkout),
        "hook_event_name": "PostToolUse",
        "tool_name": "Grep",
        "tool_input": {"pattern": "database", "path": str(machine.memory_dir)},
        "tool_response": response,
    }
    result = machine.hook("post-tool-use", payload)
    assert result.returncode == 0, result.stderr
    return (
        json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        if result.stdout
        else ""
    )


def test_a_grep_over_memory_files_notes_each_stale_one(a):
    old = a.memory_dir / "feedback_db.md"
    mtime_ms = age(old, 9)
    fresh = a.write("project_freeze.md", topic("Freeze", "Merge freeze", "project"))
    outside = a.checkout / "notes.md"
    outside.write_text("database\n")
    age(outside, 30)
    names = [str(old), str(fresh), str(outside), str(a.memory_dir / "MEMORY.md")]

    listed = grep(a, {"mode": "files_with_matches", "filenames": names, "numFiles": 4})
    assert listed == f"{old}: {staleness_note(mtime_ms)}"
    lines = f"{old}:3:Integration tests must hit a real database\n{fresh}:1:---"
    assert grep(a, {"mode": "content", "content": lines, "filenames": []}) == listed
    age(old, 0)
    assert grep(a, {"mode": "files_with_matches", "filenames": names}) == ""
