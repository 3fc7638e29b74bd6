"""Claude Code hooks: the memory section at session start, recalled memories on each prompt.

A hook runs on every session start and every prompt a person sends, so it must never slow the
agent down or get in its way (docs/design.md §15, §16): the whole answer, reading stdin
included, runs in a worker thread that gets a fixed time budget, and the hook prints nothing and
exits 0 when it is not logged in, when the budget runs out, or on any error. There are no
retries: a short connect/read timeout bounded by the budget, and one attempt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from memapp.client.config import config_dir, load_config, read_json, write_private
from memapp.client.http import NO_RETRY, Client
from memapp.client.project import find_project

__all__ = ["EVENTS", "HOOK_BUDGET", "hook_budget", "hook_output", "process_age", "run_hook"]

# Seconds for the whole hook process, counted from the moment it started (the interpreter's
# own start and imports included), so the agent always has its answer, or silence, within the
# 1 s the design promises, even on a loaded machine.
HOOK_BUDGET = 0.7
EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
MAX_STDIN_BYTES = 4 * 1024 * 1024
TRANSCRIPT_TAIL_BYTES = 256 * 1024
MAX_RECENT_TOOLS = 10
SESSION_MAX_AGE = 7 * 86_400  # seconds a session's surfaced list is kept after its last use


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


def hook_output(event: str, text: str) -> str:
    """The hook's stdout for `text` (docs/design.md §16)."""
    output = {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}
    return json.dumps(output)


def process_age() -> float:
    """Seconds since this process started (Linux: from /proc); 0.0 where that is unknown."""
    try:
        fields = Path("/proc/self/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
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
) -> bool:
    """Answer one hook `event` (a key of EVENTS) within `budget` seconds of the process's start.
    Returns whether the worker finished in time (when it did not, the caller should end the
    process rather than wait for it). Never raises; writes to `stdout` only a complete
    answer."""
    budget = hook_budget(env) if budget is None else budget
    deadline = time.monotonic() + budget - process_age()
    result: dict[str, str] = {}

    def work() -> None:
        with contextlib.suppress(Exception):
            result["text"] = _context(event, stdin, env, deadline)

    worker = threading.Thread(target=work, name="memhub-hook", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        return False
    text = result.get("text", "")
    if text.strip():
        with contextlib.suppress(Exception):
            stdout.write(hook_output(event, text) + "\n")
            stdout.flush()
    return True


def _context(event: str, stdin: IO[str], env: Mapping[str, str] | None, deadline: float) -> str:
    config = load_config(env)
    if config is None or event not in EVENTS:
        return ""
    payload = json.loads(stdin.read(MAX_STDIN_BYTES) or "{}")
    if not isinstance(payload, dict):
        return ""
    cwd = payload.get("cwd")
    project = find_project(cwd if isinstance(cwd, str) and cwd else Path.cwd(), env)
    remaining = deadline - time.monotonic()
    client = Client(
        config.url, config.token, timeout=remaining, backoff=NO_RETRY, deadline=deadline
    )
    fields = {**project.fields(), "memory_dir": str(project.memory_dir)}
    if event in ("stop", "session-end"):  # transcripts up, nothing printed (docs/design.md §14.3)
        from memapp.client.transcripts import upload_from_hook

        where = str(cwd) if isinstance(cwd, str) and cwd else str(Path.cwd())
        final = event == "session-end"
        upload_from_hook(payload, client, fields, where, env, deadline, final=final)
        return ""
    if event == "session-start":
        answer = client.post("/api/v1/prompt", fields)
        return str(answer.get("text") or "")

    query = payload.get("prompt")
    if not isinstance(query, str) or not query.strip():
        return ""
    session_id = payload.get("session_id")
    session_id = session_id if isinstance(session_id, str) and session_id else None
    surfaced_file = _session_file(env, session_id) if session_id else None
    surfaced = _surfaced(surfaced_file)
    body: dict[str, Any] = {
        **fields,
        "query": query,
        "recent_tools": _recent_tools(payload.get("transcript_path")),
        "already_surfaced": surfaced,
        "scope": "both",
    }
    if session_id:
        body["session_id"] = session_id
    answer = client.post("/api/v1/recall", body)
    paths = [m.get("path") for m in answer.get("memories") or [] if isinstance(m, dict)]
    new = [p for p in paths if isinstance(p, str) and p not in surfaced]
    if surfaced_file is not None and new:
        _remember_surfaced(surfaced_file, surfaced + new)
    return str(answer.get("rendered") or "")


# --- per-session memory of what was surfaced --------------------------------------------------


def _session_file(env: Mapping[str, str] | None, session_id: str) -> Path:
    name = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    return config_dir(env) / "sessions" / f"{name}.json"


def _surfaced(path: Path | None) -> list[str]:
    if path is None:
        return []
    paths = (read_json(path) or {}).get("surfaced")
    return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []


def _remember_surfaced(path: Path, surfaced: list[str]) -> None:
    if not path.exists():
        _prune_sessions(path.parent)
    write_private(path, json.dumps({"surfaced": surfaced}).encode())


def _prune_sessions(folder: Path) -> None:
    """Forget sessions unused for a week (done when a new session starts, so rarely)."""
    cutoff = time.time() - SESSION_MAX_AGE
    with contextlib.suppress(OSError):
        for old in folder.glob("*.json"):
            with contextlib.suppress(OSError):
                if old.stat().st_mtime < cutoff:
                    old.unlink()


# --- recently used tools, from the tail of the transcript ---------------------------------------


def _recent_tools(transcript_path: object) -> list[str]:
    """Names of the tools the agent used last (newest first), from the JSONL transcript's
    tail; empty when there is none or it cannot be read."""
    if not isinstance(transcript_path, str) or not transcript_path:
        return []
    try:
        with Path(transcript_path).open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    tools: list[str] = []
    for line in reversed(tail.splitlines()):
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the first, cut line of the tail, or noise
        for name in _tool_uses(entry):
            if name not in tools:
                tools.append(name)
        if len(tools) >= MAX_RECENT_TOOLS:
            break
    return tools[:MAX_RECENT_TOOLS]


def _tool_uses(entry: object) -> list[str]:
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [
        block["name"]
        for block in reversed(content)
        if isinstance(block, dict)
        and block.get("type") == "tool_use"
        and isinstance(block.get("name"), str)
    ]
