"""What Gemini CLI wraps around context it adds to a user turn (docs/design.md §28): hook output
in `<hook_context>…</hook_context>` and its environment preamble in `<session_context>…`. Kept
apart from the transcript code so the prompt-time hook imports nothing heavier than `re`."""

from __future__ import annotations

import re

__all__ = ["strip_hook_context"]

_INJECTED = re.compile(r"<(hook_context|session_context)>.*?</\1>\s*", re.DOTALL)


def strip_hook_context(text: str) -> str:
    """`text` without the `<hook_context>`/`<session_context>` blocks an agent added to it."""
    return _INJECTED.sub("", text).strip()
