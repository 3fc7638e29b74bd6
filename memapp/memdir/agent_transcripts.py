"""Other agents' transcripts read as Claude Code's (docs/design.md §28): each line of Gemini
CLI's session file or of a Codex rollout file becomes the entry memhub's upload, redaction,
search and extraction already read (`memapp.memdir.transcripts`), at the client, before it is
sent. The byte offsets stay those of the agent's own file, so the upload cursor works as it
does for Claude Code.

A line of the agent's bookkeeping (metadata, `$set` updates, token counts, reasoning) is passed
over uncounted; a line whose shape this code does not know (another version of the format) is
skipped and counted as `unknown_format`, never guessed at.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from memapp.memdir.digests import sha256
from memapp.memdir.hook_context import strip_hook_context
from memapp.memdir.transcripts import EntryError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONVERTERS", "codex_entry", "gemini_entry"]
# What Codex puts in user-role messages that no person typed.
_CODEX_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
# Rollout line types that hold no conversation (0.171), passed over uncounted.
CODEX_BOOKKEEPING = frozenset(
    {
        "session_meta",
        "turn_context",
        "event_msg",
        "world_state",
        "token_usage_record",
        "compacted",
    }
)


def _bookkeeping(what: str) -> EntryError:
    return EntryError("bookkeeping", f"{what} is the agent's bookkeeping")


def _unknown(what: str) -> EntryError:
    return EntryError("unknown_format", f"{what} is not a format memhub reads")


def _key(agent: str, ident: str, entry: Mapping[str, Any]) -> str:
    """A stable uuid: the agent's id plus a hash of what was kept, so the same message written
    again unchanged is stored once and a message rewritten with more (tool calls) is kept."""
    digest = sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:12]
    return f"{agent}:{ident[:60]}:{digest}"


def _entry(agent: str, ident: str, kind: str, timestamp: object, blocks: list[dict]) -> dict:
    entry: dict[str, Any] = {"type": kind, "message": {"role": kind, "content": blocks}}
    if isinstance(timestamp, str):
        entry["timestamp"] = timestamp[:40]
    entry["uuid"] = _key(agent, ident, entry)
    entry["agent"] = agent
    return entry


def _parts_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def gemini_entry(obj: object) -> dict:
    """One line of Gemini CLI's `chats/session-*.jsonl` (0.61: a metadata line, message records
    `{id, timestamp, type: user|gemini|info|error|warning, content, displayContent?,
    toolCalls?}` rewritten whole when they change, and `{"$set": …}` updates)."""
    if not isinstance(obj, Mapping):
        raise EntryError("not_object", "an entry is a JSON object")
    if "$set" in obj or ("sessionId" in obj and "projectHash" in obj):
        raise _bookkeeping("a metadata record")
    kind, ident = obj.get("type"), obj.get("id")
    if not isinstance(ident, str) or not ident or not isinstance(kind, str):
        raise _unknown("a record without id and type")
    if kind in ("info", "error", "warning"):
        raise _bookkeeping(f"a {kind} message")
    if kind == "user":
        shown = obj.get("displayContent")
        text = strip_hook_context(_parts_text(shown if shown is not None else obj.get("content")))
        if not text:
            raise _bookkeeping("a user record of injected context only")
        return _entry(
            "gemini-cli", ident, "user", obj.get("timestamp"), [{"type": "text", "text": text}]
        )
    if kind == "gemini":
        blocks: list[dict] = []
        text = _parts_text(obj.get("content"))
        if text.strip():
            blocks.append({"type": "text", "text": text})
        for call in obj.get("toolCalls") or []:
            if isinstance(call, Mapping) and isinstance(call.get("name"), str):
                args = call.get("args")
                blocks.append(
                    {
                        "type": "tool_use",
                        "name": call["name"],
                        "input": args if isinstance(args, Mapping) else {},
                    }
                )
        if not blocks:
            raise _bookkeeping("an empty model record")
        return _entry("gemini-cli", ident, "assistant", obj.get("timestamp"), blocks)
    raise _unknown(f"a record of type {kind[:40]!r}")


def _codex_text(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return "\n".join(
        part["text"]
        for part in content
        if isinstance(part, Mapping)
        and part.get("type") in ("input_text", "output_text")
        and isinstance(part.get("text"), str)
    )


def codex_entry(obj: object) -> dict:
    """One line of a Codex rollout file (0.171: `sessions/YYYY/MM/DD/rollout-*.jsonl`, each line
    `{timestamp, ordinal?, type, payload}`). The conversation is in `response_item` lines:
    `message` items of role `user` (the person, and injected `<environment_context>`) and
    `assistant`, `developer` items (instructions, hook context), `function_call`s; every other
    line type (`session_meta`, `turn_context`, `event_msg`, `world_state`, …) is bookkeeping."""
    if not isinstance(obj, Mapping):
        raise EntryError("not_object", "an entry is a JSON object")
    kind, payload, timestamp = obj.get("type"), obj.get("payload"), obj.get("timestamp")
    if not isinstance(kind, str) or not isinstance(payload, Mapping):
        raise _unknown("a line without a type and a payload")
    if kind in CODEX_BOOKKEEPING:
        raise _bookkeeping(f"a {kind} line")
    if kind != "response_item":
        raise _unknown(f"a line of type {kind[:40]!r}")
    inner = payload.get("type")
    ident = str(payload.get("id") or payload.get("call_id") or f"{timestamp}:{inner}")
    if inner == "message":
        role, text = payload.get("role"), _codex_text(payload.get("content")).strip()
        if role == "user" and text and not text.startswith(_CODEX_INJECTED):
            return _entry("codex", ident, "user", timestamp, [{"type": "text", "text": text}])
        if role == "assistant" and text:
            said = {"type": "text", "text": text}
            return _entry("codex", ident, "assistant", timestamp, [said])
        raise _bookkeeping(f"a {str(role)[:20]} message")
    if inner in ("function_call", "custom_tool_call") and isinstance(payload.get("name"), str):
        raw = payload.get("arguments", payload.get("input"))
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            arguments = {"input": raw}
        if not isinstance(arguments, Mapping):
            arguments = {"input": str(raw)}
        block: dict[str, Any] = {
            "type": "tool_use",
            "name": payload["name"],
            "input": dict(arguments),
        }
        return _entry("codex", ident, "assistant", timestamp, [block])
    raise _bookkeeping(f"a {str(inner)[:40]} item")


# Each agent's converter, by memhub-agent's name for the agent (Claude Code's needs none).
CONVERTERS: dict[str, Callable[[object], dict]] = {
    "gemini-cli": gemini_entry,
    "codex": codex_entry,
}
