"""`memhub-agent hook claude-code …`: the exact output Claude Code reads, and silence within a
second whenever memhub cannot help or must not (memory off, not logged in, server down,
server hanging, any error)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from memapp.client.hooks import HOOKS, hook_output
from memapp.client.recall_hook import recent_tools
from tests.client.conftest import AGENT, Machine, topic

pytestmark = pytest.mark.django_db(transaction=True)

EVENTS = list(HOOKS)
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
    if event == "post-tool-use":
        read = {"file_path": str(machine.memory_dir / "feedback_db.md")}
        return {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": read,
            "tool_response": {"type": "text"},
        }
    return {
        **common,
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        "prompt_id": "p-1",
        "permission_mode": "default",
    }


def timed_hook(machine: Machine, event: str) -> tuple[subprocess.CompletedProcess, float]:
    """The hook with the budget a real agent gives it, and its wall time (less the load's)."""
    machine.default_budget()
    started = time.monotonic()
    result = machine.hook(event, payload(machine, event))
    return result, machine.without_load(time.monotonic() - started)


def context(result: subprocess.CompletedProcess, event: str) -> str:
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert list(output["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert output["hookSpecificOutput"]["hookEventName"] == HOOKS[event].event
    return output["hookSpecificOutput"]["additionalContext"]


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


# --- with a working server ---------------------------------------------------------------------


def test_session_start_leaves_the_memory_section_to_claude_code(a):
    # Claude Code writes its own memory section and loads MEMORY.md itself: with nothing
    # pulled, no team memory and nothing waiting for review, memhub adds nothing.
    result = a.hook("session-start", payload(a, "session-start"))

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_session_start_creates_the_memory_dir(machine_a, server):
    machine_a.login(server)
    assert not machine_a.memory_dir.exists()

    result = machine_a.hook("session-start", payload(machine_a, "session-start"))

    assert result.returncode == 0
    assert machine_a.memory_dir.is_dir()  # the agent is told it already exists


def test_user_prompt_submit_adds_the_recalled_memories_without_a_wrapper(a):
    text = context(
        a.hook("user-prompt-submit", payload(a, "user-prompt-submit")), "user-prompt-submit"
    )

    # Claude Code labels hook context itself and escapes `<system-reminder>`: plain text only.
    assert "system-reminder" not in text
    assert text.startswith(f"Memory (saved today): {a.memory_dir / 'feedback_db.md'}:\n\n---\n")
    assert "Use the real database in integration tests." in text


def test_a_memory_is_surfaced_once_per_session(a):
    first = a.hook("user-prompt-submit", payload(a, "user-prompt-submit"))
    again = a.hook("user-prompt-submit", payload(a, "user-prompt-submit"))

    assert "feedback_db.md" in first.stdout
    assert (again.returncode, again.stdout) == (0, "")
    # The server keeps what the session was shown (docs/design.md §21), not the machine.
    assert not (a.config_dir / "sessions").exists()


def test_an_unrelated_prompt_adds_nothing(a):
    result = a.hook("user-prompt-submit", payload(a, "user-prompt-submit", "thanks, bye"))

    assert (result.returncode, result.stdout) == (0, "")


# --- memory off means silence ------------------------------------------------------------------

MEMORY_OFF = {
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"},
    "remote session without a memory dir": {"CLAUDE_CODE_REMOTE": "true"},
}


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("switch", [*MEMORY_OFF, "user settings", "local settings"])
def test_memory_off_means_silence_and_no_request(machine_a, recording_server, event, switch):
    machine_a.extra_env.update(MEMHUB_URL=recording_server.url, MEMHUB_TOKEN="mh_x")
    machine_a.write("feedback_db.md", topic("Real DB", "Tests hit a real database"))
    machine_a.hook(event, payload(machine_a, event))
    assert recording_server.requests, "the control: with memory on, the hook asks the server"
    recording_server.requests.clear()
    off = {"autoMemoryEnabled": False}
    if switch == "user settings":
        (machine_a.home / ".claude" / "settings.json").write_text(json.dumps(off))
    elif switch == "local settings":  # the checkout's own, untracked settings.local.json
        (machine_a.checkout / ".claude").mkdir()
        (machine_a.checkout / ".claude" / "settings.local.json").write_text(json.dumps(off))
    else:
        machine_a.extra_env.update(MEMORY_OFF[switch])

    result = machine_a.hook(event, payload(machine_a, event))

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert recording_server.requests == []


def test_a_repository_cannot_switch_memory_on_against_the_users_settings(
    machine_a, recording_server
):
    machine_a.extra_env.update(MEMHUB_URL=recording_server.url, MEMHUB_TOKEN="mh_x")
    settings = machine_a.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"autoMemoryEnabled": False}))
    (machine_a.checkout / ".claude").mkdir()
    (machine_a.checkout / ".claude" / "settings.json").write_text('{"autoMemoryEnabled": true}')

    result = machine_a.hook("user-prompt-submit", payload(machine_a, "user-prompt-submit"))

    assert (result.returncode, result.stdout) == (0, "")
    assert recording_server.requests == []


# --- silence whenever memhub cannot help -------------------------------------------------------


@pytest.mark.parametrize("event", EVENTS)
def test_hooks_print_nothing_when_not_logged_in(machine_a, event):
    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert elapsed < 1.0


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_hooks_print_nothing_within_a_second_when_the_server_is_down(machine_a, closed_port, event):
    machine_a.extra_env.update(MEMHUB_URL=f"http://127.0.0.1:{closed_port}", MEMHUB_TOKEN="mh_x")

    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout) == (0, "")
    assert elapsed < 1.0


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_hooks_print_nothing_within_a_second_when_the_server_hangs(machine_a, silent_server, event):
    machine_a.extra_env.update(MEMHUB_URL=silent_server, MEMHUB_TOKEN="mh_x")

    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout) == (0, "")
    assert elapsed < 1.0


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_hooks_print_nothing_when_the_token_is_refused(machine_a, server, event):
    machine_a.extra_env.update(MEMHUB_URL=server.url, MEMHUB_TOKEN="mh_not-a-token")

    result, elapsed = timed_hook(machine_a, event)

    assert (result.returncode, result.stdout) == (0, "")
    assert elapsed < 1.0


def test_a_hook_whose_stdin_never_closes_still_ends_within_a_second(machine_a, server):
    machine_a.login(server)
    machine_a.default_budget()
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
        elapsed = machine_a.without_load(time.monotonic() - started)
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


@pytest.mark.parametrize(
    "args", [["pre-tool-use"], [], ["user-prompt-submit", "extra"], ["--bogus", "x"]]
)
def test_a_misconfigured_hook_command_never_blocks_the_prompt(machine_a, args):
    # Exit status 2 from a UserPromptSubmit hook would make Claude Code drop the prompt.
    result = machine_a.run("hook", "claude-code", *args, stdin="{}")

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
    assert json.loads(hook_output("post-tool-use", "y"))["hookSpecificOutput"] == {
        "hookEventName": "PostToolUse",
        "additionalContext": "y",
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

    assert recent_tools(str(transcript)) == ["Bash", "Grep", "Read"]
    assert recent_tools(str(tmp_path / "missing.jsonl")) == []
    assert recent_tools(None) == []


# --- an agent's own memory ---------------------------------------------------------------------


def test_an_agent_with_memory_of_its_own_is_recalled_its_own(a, alice, tmp_path):
    """`claude --agent reviewer`: the hook input names the agent, whose memory dir exists here
    and whose store memhub has (discovered, or pushed with `snapshot push`)."""
    from memapp.stores.mirror import rescan_store
    from memapp.stores.models import Store
    from tests.conftest import write_memory

    server_copy = tmp_path / "server" / "agent-memory" / "reviewer"
    write_memory(
        server_copy, "review_tests.md", "Tests", "Ask for tests with every bug fix", "feedback"
    )
    store = Store.objects.create(
        kind=Store.Kind.AGENT,
        origin=Store.Origin.MANAGED,
        path=str(server_copy),
        owner=alice,
        agent_type="reviewer",
        agent_scope="user",
    )
    rescan_store(store)
    local = a.home / ".claude" / "agent-memory" / "reviewer"
    local.mkdir(parents=True)
    question = "should every bug fix come with tests and a real database?"
    as_agent = {**payload(a, "user-prompt-submit", question), "agent_type": "reviewer"}

    text = context(a.hook("user-prompt-submit", as_agent), "user-prompt-submit")

    assert text.startswith(f"Memory (saved today): {local / 'review_tests.md'}:")
    assert "feedback_db.md" not in text
    plain = {**as_agent, "agent_type": "general-purpose", "session_id": "other"}
    assert "feedback_db.md" in a.hook("user-prompt-submit", plain).stdout
