"""UserPromptSubmit: the memories that fit the prompt, recalled by the server (docs/design.md §7,
§16).

The server keeps what each session was shown (docs/design.md §21), so a memory is never
offered twice in a session, whatever the agent read itself (see `read_hook`). The request says
how long the hook can still wait: the model selector answers within it or the server answers
with its offline picks. The memories are sent without the `<system-reminder>` wrapper: Claude
Code labels hook context itself, and escapes the tag, so the agent would see `&lt;…>`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memapp.client.hooks import HookCall
from memapp.memdir.freshness import RecalledMemory, render_recalled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["recall", "recent_tools"]

TRANSCRIPT_TAIL_BYTES = 256 * 1024
MAX_RECENT_TOOLS = 10
# Of what the hook has left, what the server must keep for itself after the model: reading and
# rendering the picked memories, and the answer's way back.
ANSWER_MARGIN = 0.1


def recall(call: HookCall) -> str:
    query = call.payload.get("prompt")
    if not isinstance(query, str) or not query.strip():
        return ""
    memory_dir = call.project.memory_dir
    body: dict[str, Any] = {
        **call.project.fields(),
        "query": query,
        "recent_tools": recent_tools(call.payload.get("transcript_path")),
        "scope": "both",
        "memory_dir": str(memory_dir),
        "wait_ms": max(0, int((call.remaining() - ANSWER_MARGIN) * 1000)),
    }
    agent_type = call.payload.get("agent_type")
    scope = call.project.agent_scope(agent_type) if isinstance(agent_type, str) else None
    if isinstance(agent_type, str) and scope is not None:  # an agent with memory of its own
        body.update(
            agent_type=agent_type,
            agent_scope=scope,
            memory_dir=str(call.project.agent_dir(agent_type, scope)),
        )
    if call.session_id:
        body["session_id"] = call.session_id
    answer = call.client().post("/api/v1/recall", body)
    memories = [
        RecalledMemory(m["path"], m["mtime_ms"], m["content"])
        for m in answer.get("memories") or []
        if isinstance(m, dict)
    ]
    return render_recalled(memories, wrap=False)


def recent_tools(transcript_path: object) -> list[str]:
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
