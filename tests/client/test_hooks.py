"""`memhub-agent hook claude-code …`: the exact output Claude Code reads, and silence within a
second whenever memhub cannot help (not logged in, server down, server hanging, any error)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from memapp.client.hooks import _recent_tools, hook_output
from tests.client.conftest import AGENT, Machine, topic

pytestmark = pytest.mark.django_db(transaction=True)

EVENTS = ["session-start", "user-prompt-submit"]
SESSION = "5f1c3a52-0d7e-4b9a-9c1e-3f7a2b8d6e01"


def payload(machine: Machine, event: str, prompt: str = "how do we test the database?") -> dict:
    """What Claude Code 2.1.328 sends on stdin (docs/design.md §16)."""
    common = {
        "session_id": SESSION,
        "transcript_path": str(machine.home / ".claude" / "transcript.jsonl"),
        "cwd": str(machine.checkout),
    }
    if event == "session-start":
        return {**common, "hook_event_name": "SessionStart", "source": "startup"}
    return {
        **common,
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        "prompt_id": "p-1",
        "permission_mode": "default",
    }


def timed_hook(machine: Machine, event: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = machine.hook(event, payload(machine, event))
    return result, time.monotonic() - started


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    machine_a.write("MEMORY.md", "- [Real DB](feedback_db.md) — integration tests, no mocks\n")
    machine_a.write(
        "feedback_db.md",
        topic(
            "Integration tests use a real database",
            "Integration tests must hit a real database, not mocks",
            body="Use the real database in integration tests.\n\n**Why:** mocks hid a broken "
            "migration.\n**How to apply:** every test under tests/integration.\n",
        ),
    )
    machine_a.sync()
    return machine_a


# --- with a working server (needs the /api/v1/prompt and /api/v1/recall endpoints) ---------


def test_session_start_adds_the_memory_section_of_the_prompt(a):
    result = a.hook("session-start", payload(a, "session-start"))

    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert list(output["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert context == a.run("prompt").stdout.removesuffix("\n")
    assert str(a.memory_dir) in context
    assert "[Real DB](feedback_db.md)" in context


def test_user_prompt_submit_adds_the_recalled_memories(a):
    result = a.hook("user-prompt-submit", payload(a, "user-prompt-submit"))

    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("<system-reminder>")
    assert context.rstrip().endswith("</system-reminder>")
    assert f"Memory (saved today): {a.memory_dir / 'feedback_db.md'}:" in context
    assert "Use the real database in integration tests." in context


def test_a_memory_is_surfaced_once_per_session(a):
    first = a.hook("user-prompt-submit", payload(a, "user-prompt-submit"))
    again = a.hook("user-prompt-submit", payload(a, "user-prompt-submit"))

    assert "feedback_db.md" in first.stdout
    assert again.returncode == 0
    assert again.stdout == ""


def test_an_unrelated_prompt_adds_nothing(a):
    result = a.hook("user-prompt-submit", payload(a, "user-prompt-submit", "thanks, bye"))

    assert result.returncode == 0
    assert result.stdout == ""


# --- silence whenever memhub cannot help -------------------------------------------------------


@pytest.mark.parametrize("event", EVENTS)
def test_hooks_print_nothing_when_not_logged_in(machine_a, event):
    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert elapsed < 1.0


@pytest.mark.parametrize("event", EVENTS)
def test_hooks_print_nothing_within_a_second_when_the_server_is_down(machine_a, closed_port, event):
    machine_a.extra_env.update(MEMHUB_URL=f"http://127.0.0.1:{closed_port}", MEMHUB_TOKEN="mh_x")

    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout) == (0, "")
    assert elapsed < 1.0


@pytest.mark.parametrize("event", EVENTS)
def test_hooks_print_nothing_within_a_second_when_the_server_hangs(machine_a, silent_server, event):
    machine_a.extra_env.update(MEMHUB_URL=silent_server, MEMHUB_TOKEN="mh_x")

    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout) == (0, "")
    assert elapsed < 1.0


@pytest.mark.parametrize("event", EVENTS)
def test_hooks_print_nothing_when_the_token_is_refused(machine_a, server, event):
    machine_a.extra_env.update(MEMHUB_URL=server.url, MEMHUB_TOKEN="mh_not-a-token")

    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout) == (0, "")
    assert elapsed < 1.0


def test_a_hook_whose_stdin_never_closes_still_ends_within_a_second(machine_a, server):
    machine_a.login(server)
    started = time.monotonic()
    process = subprocess.Popen(
        [str(AGENT), "hook", "claude-code", "user-prompt-submit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=machine_a.env,
    )
    try:
        process.stdin.write(b'{"prompt": "how do we test')  # and never the rest nor EOF
        process.stdin.flush()
        process.wait(timeout=5)
        elapsed = time.monotonic() - started
        stdout = process.stdout.read()
    finally:
        process.stdin.close()
        process.stdout.close()
        if process.poll() is None:
            process.kill()
    assert elapsed < 1.0
    assert (process.returncode, stdout) == (0, b"")


@pytest.mark.parametrize(
    "stdin", ["", "not json", "[1, 2]", '{"prompt": 42, "cwd": "/nonexistent"}', '{"cwd": 7}']
)
def test_hooks_print_nothing_on_malformed_input(machine_a, server, stdin):
    machine_a.login(server)

    result = machine_a.run("hook", "claude-code", "user-prompt-submit", stdin=stdin)

    assert (result.returncode, result.stdout) == (0, "")


def test_a_misconfigured_hook_command_never_blocks_the_prompt(machine_a):
    # Exit status 2 from a UserPromptSubmit hook would make Claude Code drop the prompt.
    result = machine_a.run("hook", "claude-code", "pre-tool-use", stdin="{}")

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


# --- pieces ------------------------------------------------------------------------------------


def test_hook_output_has_the_shape_claude_code_reads():
    assert json.loads(hook_output("user-prompt-submit", "text")) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "text"}
    }
    assert json.loads(hook_output("session-start", "x"))["hookSpecificOutput"] == {
        "hookEventName": "SessionStart",
        "additionalContext": "x",
    }


def test_recent_tools_come_from_the_transcript_tail_newest_first(tmp_path):
    def assistant(*tools: str) -> str:
        content = [{"type": "text", "text": "…"}] + [
            {"type": "tool_use", "id": f"t{i}", "name": name, "input": {}}
            for i, name in enumerate(tools)
        ]
        return json.dumps(
            {"type": "assistant", "message": {"role": "assistant", "content": content}}
        )

    transcript = tmp_path / "t.jsonl"
    lines = [
        assistant("Read"),
        json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}),
        assistant("Grep", "Bash"),
        "{truncated",
        assistant("Bash"),
    ]
    transcript.write_text("\n".join(lines) + "\n")

    assert _recent_tools(str(transcript)) == ["Bash", "Grep", "Read"]
    assert _recent_tools(str(tmp_path / "missing.jsonl")) == []
    assert _recent_tools(None) == []
