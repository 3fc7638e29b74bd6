"""Gemini CLI's and Codex CLI's session-start and prompt hooks (docs/design.md §28): Claude
Code's handlers, with what those agents lack.

Claude Code loads the project's memory index itself; Gemini CLI and Codex CLI do not read
Claude Code's memory dir, so their session start adds memhub's private index of the project
too, read after the pull, beside the team index and the review notice. Gemini CLI passes the
prompt to BeforeAgent with earlier hook context (`<hook_context>…</hook_context>`) in it; recall
looks for the person's words only.
"""

from __future__ import annotations

from memapp.client import recall_hook
from memapp.client.hooks import HookCall
from memapp.memdir.hook_context import strip_hook_context

__all__ = ["recall", "session_start"]


def _private_index(call: HookCall) -> str:
    from memapp.memdir.index import load_index  # YAML and the scanner: only when needed
    from memapp.memdir.store_files import INDEX_FILENAME

    memory_dir = call.project.memory_dir
    content = load_index(memory_dir).content.strip()
    if not content:
        return ""
    return (
        f"memhub's memory of this project (index {memory_dir / INDEX_FILENAME}; each line names "
        f"a file in {memory_dir}, read it when it is relevant):\n\n{content}"
    )


def session_start(call: HookCall) -> str:
    from memapp.client.session_hook import session_start as claude_session_start  # pull, sync
    from memapp.memdir.store_files import INDEX_FILENAME  # not for the prompt hook

    answer = claude_session_start(call)
    fresh = str(call.project.memory_dir / INDEX_FILENAME)
    if f"Contents of {fresh}" in answer:
        return answer  # the pull changed it: the fresh copy is already there
    return "\n\n".join(part for part in (_private_index(call), answer) if part)


def recall(call: HookCall) -> str:
    prompt = call.payload.get("prompt")
    if not isinstance(prompt, str):
        return ""
    payload = {**call.payload, "prompt": strip_hook_context(prompt)}
    return recall_hook.recall(call.with_payload(payload))
