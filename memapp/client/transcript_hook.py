"""Stop and SessionEnd: the session's transcript up to memhub, nothing said to the agent
(docs/design.md §14.3, §16)."""

from __future__ import annotations

from pathlib import Path

from memapp.client.hooks import HookCall
from memapp.client.transcripts import upload_from_hook
from memapp.memdir.paths import auto_dream_enabled

__all__ = ["session_end", "stop"]


def _upload(call: HookCall, *, final: bool) -> str:
    cwd = call.payload.get("cwd")
    where = cwd if isinstance(cwd, str) and cwd else str(Path.cwd())
    fields = {
        **call.project.fields(),
        "memory_dir": str(call.project.memory_dir),
        "auto_dream": auto_dream_enabled(call.env, call.settings),
    }
    upload_from_hook(
        call.payload,
        call.client(),
        fields,
        where,
        call.env,
        call.deadline,
        final=final,
        agent=call.agent,
    )
    return ""


def stop(call: HookCall) -> str:
    return _upload(call, final=False)


def session_end(call: HookCall) -> str:
    return _upload(call, final=True)
