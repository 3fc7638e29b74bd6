"""Claude Code hooks: one table of the events memhub-agent answers, and the runner they share.

A hook runs on every session start, every prompt and every tool call, so it must never slow the
agent down or get in its way (docs/design.md §16): the whole answer, reading stdin included,
runs in a worker thread that gets a fixed time budget, and the hook prints nothing and exits 0
when auto memory is off, when it is not logged in, when the budget runs out, or on any error.
There are no retries: a short connect/read timeout bounded by the budget, and one attempt.

Each event's handler lives in a module of its own, named in `HOOKS` and imported only when its
event fires, so a hook process loads what its event needs and nothing else: no Django, no
detect-secrets, no YAML unless the answer needs it. What every hook loads is kept to what a
request needs (`python -X importtime`; docs/scaling.md): named tuples and plain classes rather
than dataclasses (which load `inspect`), no argparse.
"""

from __future__ import annotations

import _thread  # not `threading` (a millisecond of every hook): a lock and one worker
import contextlib
import importlib
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from memapp.client.config import Config, load_config
from memapp.client.http import NO_RETRY, Client
from memapp.client.project import Project, find_project
from memapp.memdir.agent_switches import RECALL, RECORD, agent_memory_allows
from memapp.memdir.paths import auto_memory_enabled, load_user_settings
from memapp.memdir.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

__all__ = [
    "AGENT_HOOKS",
    "HOOK_BUDGET",
    "HOOKS",
    "Hook",
    "HookCall",
    "hook_budget",
    "hook_output",
    "process_age",
    "run_hook",
]

# Seconds for the whole hook process, counted from the moment it started (the interpreter's
# own start and imports included), so the agent always has its answer, or silence, within the
# 1 s the design promises, even on a loaded machine.
HOOK_BUDGET = 0.7
MAX_STDIN_BYTES = 4 * 1024 * 1024
# What a handler leaves unused of the budget: time to print, and for a last write to finish.
PRINT_MARGIN = 0.05
WRITE_GRACE = 0.25  # how long an expired hook still waits for a write already started


class Hook(Record):
    """One event: the name Claude Code gives it, and its handler as `module:function`, a
    function taking a `HookCall` and returning the context to add ("" adds nothing)."""

    event: str
    handler: str

    def load(self) -> Callable[[HookCall], str]:
        module, function = self.handler.split(":")
        return getattr(importlib.import_module(module), function)


# The events memhub-agent answers: `memhub-agent hook claude-code <name>`.
HOOKS: dict[str, Hook] = {
    "session-start": Hook("SessionStart", "memapp.client.session_hook:session_start"),
    "user-prompt-submit": Hook("UserPromptSubmit", "memapp.client.recall_hook:recall"),
    "post-tool-use": Hook("PostToolUse", "memapp.client.read_hook:after_read"),
    "stop": Hook("Stop", "memapp.client.transcript_hook:stop"),
    "session-end": Hook("SessionEnd", "memapp.client.transcript_hook:session_end"),
}
# Gemini CLI and Codex CLI speak the same hook I/O as Claude Code for these events (the same
# stdin fields, `hookSpecificOutput.additionalContext` out; docs/design.md §28): their events
# map onto the same handlers, their transcripts are converted where they are read.
GEMINI_HOOKS: dict[str, Hook] = {
    "session-start": Hook("SessionStart", "memapp.client.agent_hooks:session_start"),
    "before-agent": Hook("BeforeAgent", "memapp.client.agent_hooks:recall"),
    "after-agent": Hook("AfterAgent", "memapp.client.transcript_hook:stop"),
    "session-end": Hook("SessionEnd", "memapp.client.transcript_hook:session_end"),
}
CODEX_HOOKS: dict[str, Hook] = {
    "session-start": Hook("SessionStart", "memapp.client.agent_hooks:session_start"),
    "user-prompt-submit": Hook("UserPromptSubmit", "memapp.client.agent_hooks:recall"),
    "stop": Hook("Stop", "memapp.client.transcript_hook:stop"),
    "session-end": Hook("SessionEnd", "memapp.client.transcript_hook:session_end"),
}
AGENT_HOOKS: dict[str, dict[str, Hook]] = {
    "claude-code": HOOKS,
    "gemini-cli": GEMINI_HOOKS,
    "codex": CODEX_HOOKS,
}


class HookCall:
    """What a handler works with: the agent's input, where it works, the settings a person
    controls (read once per hook), and the time left."""

    def __init__(
        self,
        payload: dict[str, Any],
        project: Project,
        config: Config,
        deadline: float,  # time.monotonic() by which the answer must be printed
        env: Mapping[str, str] | None = None,
        agent: str = "claude-code",  # whose hook this is: a key of AGENT_HOOKS
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.payload = payload
        self.project = project
        self.config = config
        self.deadline = deadline
        self.env = env
        self.agent = agent
        self.settings: Mapping[str, Any] = {} if settings is None else settings
        # Held while files are written, so an expired hook never exits in the middle of a write.
        self.writing = _thread.allocate_lock()

    def with_payload(self, payload: dict[str, Any]) -> HookCall:
        """The same call with another input (sharing its write lock)."""
        call = HookCall(
            payload, self.project, self.config, self.deadline, self.env, self.agent, self.settings
        )
        call.writing = self.writing
        return call

    @property
    def session_id(self) -> str | None:
        value = self.payload.get("session_id")
        return value if isinstance(value, str) and value else None

    def remaining(self) -> float:
        """Seconds left for work, the margin to print kept aside."""
        return self.deadline - PRINT_MARGIN - time.monotonic()

    def client(self) -> Client:
        """One attempt, no retries, every wait bounded by what is left of the budget."""
        deadline = self.deadline - PRINT_MARGIN
        return Client(
            self.config.url,
            self.config.token,
            timeout=max(0.0, deadline - time.monotonic()),
            backoff=NO_RETRY,
            deadline=deadline,
        )


def hook_budget(env: Mapping[str, str] | None = None) -> float:
    """`MEMHUB_HOOK_TIMEOUT` (seconds) when set to a positive number, else HOOK_BUDGET. Raising
    it gives a server with the LLM selector time to answer, at the cost of a slower prompt and
    of the 1 s promise."""
    value = (os.environ if env is None else env).get("MEMHUB_HOOK_TIMEOUT", "")
    try:
        budget = float(value)
    except ValueError:
        return HOOK_BUDGET
    return budget if budget > 0 else HOOK_BUDGET


def hook_output(event: str, text: str, agent: str = "claude-code") -> str:
    """The hook's stdout for `text` (docs/design.md §16, §28)."""
    name = AGENT_HOOKS[agent][event].event
    output = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}
    return json.dumps(output)


def process_age() -> float:
    """Seconds since this process started (Linux: from /proc); 0.0 where that is unknown."""
    try:
        fields = Path("/proc/self/stat").read_bytes().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, `starttime`
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def run_hook(
    event: str,
    stdin: IO[str],
    stdout: IO[str],
    env: Mapping[str, str] | None = None,
    budget: float | None = None,
    agent: str = "claude-code",
) -> bool:
    """Answer one hook `event` (a key of `agent`'s table in AGENT_HOOKS) within `budget`
    seconds of the process's start. Returns whether the worker finished in time (when it did
    not, the caller should end the process rather than wait for it). Never raises; writes to
    `stdout` only a complete answer."""
    budget = hook_budget(env) if budget is None else budget
    deadline = time.monotonic() + budget - process_age()
    result: dict[str, Any] = {}

    finished = _thread.allocate_lock()
    finished.acquire()  # released by the worker when it is done

    def work() -> None:
        try:
            with contextlib.suppress(Exception):
                result["text"] = _context(agent, event, stdin, env, deadline, result)
        finally:
            finished.release()

    # A bare thread is a daemon one: an expired worker does not keep the process alive.
    _thread.start_new_thread(work, ())
    if not finished.acquire(timeout=max(0.0, deadline - time.monotonic())):
        call = result.get("call")
        if call is not None and call.writing.acquire(timeout=WRITE_GRACE):
            call.writing.release()  # no write is half done; the process may end now
        return False
    text = result.get("text", "")
    if text.strip():
        with contextlib.suppress(Exception):
            stdout.write(hook_output(event, text, agent) + "\n")
            stdout.flush()
    return True


def _context(
    agent: str,
    event: str,
    stdin: IO[str],
    env: Mapping[str, str] | None,
    deadline: float,
    result: dict[str, Any],
) -> str:
    hook = AGENT_HOOKS.get(agent, {}).get(event)
    config = load_config(env)
    if hook is None or config is None:
        return ""
    payload = json.loads(stdin.read(MAX_STDIN_BYTES) or "{}")
    if not isinstance(payload, dict):
        return ""
    cwd = payload.get("cwd")
    where = Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd()
    settings = load_user_settings(env, project_dir=where)
    if not auto_memory_enabled(env, settings):
        return ""  # memory is off: nothing is read, sent or said
    what = RECORD if hook.handler.startswith("memapp.client.transcript_hook:") else RECALL
    if not agent_memory_allows(agent, what, env, where):
        return ""  # the agent's own switch is off for this (docs/design.md §28)
    project = find_project(where, env, settings)
    call = HookCall(payload, project, config, deadline, env, agent, settings)
    result["call"] = call
    return hook.load()(call)
