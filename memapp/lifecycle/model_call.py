"""The lifecycle's model calls (docs/design.md §14.5, §14.10): a Messages API request that
forces the `propose_memory_changes` tool, tried once more on a timeout, an overload or a bad
tool input (extraction, consolidation and distillation all ask through it); and a plain text
answer, for session summaries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from django.conf import settings

from memapp.memdir.extraction import PROPOSE_TOOL, TOOL_NAME

__all__ = ["ATTEMPTS", "ModelFailed", "ask_for_changes", "ask_for_text"]

ATTEMPTS = 2  # a failed model call is tried once more


class ModelFailed(Exception):
    """No usable answer after ATTEMPTS calls; the message says why (kept on the run)."""


class Run(Protocol):
    attempts: int


def _client(timeout: float) -> Any:
    import anthropic  # here: most of a second to import, which every command would pay at start

    return anthropic.Anthropic(
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL or None,
        timeout=timeout,
        max_retries=0,  # the one retry is ours, for bad answers too
    )


def ask_for_text(
    run: Run,
    *,
    model: str,
    timeout: float,
    max_tokens: int,
    system: str,
    text: str,
    check: Callable[[str], object],
) -> str:
    """The model's text answer, which `check` accepts (raises ValueError otherwise), counting
    each call in `run.attempts`; ModelFailed when no attempt gave one."""
    import anthropic

    client = _client(timeout)
    failure = ""
    for attempt in range(1, ATTEMPTS + 1):
        run.attempts += 1
        try:
            message = client.messages.create(
                model=model,
                max_tokens=max_tokens,
                system=system,
                messages=[{"role": "user", "content": text}],
            )
        except anthropic.APIError as exc:
            failure = f"{type(exc).__name__}: {exc}"[:500]
            continue
        answer = "".join(block.text for block in message.content if block.type == "text")
        try:
            check(answer)
        except ValueError as exc:
            failure = f"bad answer (attempt {attempt}): {exc}"
            continue
        return answer
    raise ModelFailed(failure)


def ask_for_changes(
    run: Run, *, model: str, timeout: float, max_tokens: int, system: str, text: str
) -> list:
    """The model's `changes`, counting each call in `run.attempts`; ModelFailed otherwise."""
    import anthropic

    client = _client(timeout)
    failure = ""
    for attempt in range(1, ATTEMPTS + 1):
        run.attempts += 1
        try:
            message = client.messages.create(
                model=model,
                max_tokens=max_tokens,
                system=system,
                tools=[PROPOSE_TOOL],
                tool_choice={"type": "tool", "name": TOOL_NAME},
                messages=[{"role": "user", "content": text}],
            )
        except anthropic.APIError as exc:
            failure = f"{type(exc).__name__}: {exc}"[:500]
            continue
        for block in message.content:
            if block.type == "tool_use" and block.name == TOOL_NAME:
                tool_input = block.input if isinstance(block.input, dict) else {}
                if isinstance(tool_input.get("changes"), list):
                    return tool_input["changes"]
        failure = f"bad tool input (attempt {attempt}): no propose_memory_changes call with changes"
    raise ModelFailed(failure)
