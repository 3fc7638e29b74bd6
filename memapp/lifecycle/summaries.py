"""Session summaries on the server (docs/design.md §14.10): when a session's upload makes one due,
a task reads the entries after the summary's cursor and writes the new summary, with a model
when there is an API key (one Messages API call: the current summary and only the new
messages), else with memhub's rules.

At most one update per session waits at a time (`SessionSummary.queued`); entries arriving
meanwhile are read by it or make the next one due.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.utils import timezone

from memapp.lifecycle.model_call import ModelFailed, ask_for_text
from memapp.lifecycle.models import Session, SessionSummary
from memapp.lifecycle.sessions import check_with_gate, entry_from_row
from memapp.memdir.session_summary import (
    SUMMARY_SYSTEM,
    OfflineSummary,
    fit_sections,
    parse_summary,
    render_new_messages,
    render_summary,
    summary_due,
    summary_for_context,
)
from memapp.stores.flags import get_flags

__all__ = [
    "HOOK_SUMMARY_CHARS",
    "hook_summary",
    "run_summary",
    "summary_is_due",
]

log = logging.getLogger(__name__)

MAX_TOKENS = 16_000  # the summary's 12,000 and room to spare
MAX_MESSAGES_CHARS = 400_000  # the new messages sent, at most (their end kept)
# The SessionStart hook's answer carries at most this much of a summary (Claude Code keeps a
# hook's additionalContext to 10,000 characters).
HOOK_SUMMARY_CHARS = 9_000


def summary_is_due(session: Session, summary: SessionSummary | None) -> bool:
    return summary_due(
        built=summary is not None and summary.built,
        tokens=session.tokens,
        tokens_at=summary.tokens_at if summary is not None else 0,
        tool_calls=session.tool_calls,
        tool_calls_at=summary.tool_calls_at if summary is not None else 0,
        at_rest=session.at_rest,
    )


def _ask_model(summary: SessionSummary, messages: str) -> dict[str, str]:
    current = summary.text.strip() or "(none yet: this is the session's first summary)"
    text = (
        f"<current_summary>\n{current}\n</current_summary>\n\n"
        f"<new_messages>\n{messages[-MAX_MESSAGES_CHARS:]}\n</new_messages>"
    )
    answer = ask_for_text(
        summary,
        model=settings.MEMHUB_EXTRACTION_MODEL,
        timeout=settings.MEMHUB_EXTRACTION_TIMEOUT,
        max_tokens=MAX_TOKENS,
        system=SUMMARY_SYSTEM,
        text=text,
        check=parse_summary,
    )
    return parse_summary(answer)


def run_summary(session_pk: int) -> dict:
    """Bring one session's summary up to date; what it did (the task's result). A failed
    model call leaves the cursor where it was, so the next update reads those entries."""
    started = time.monotonic()
    session = Session.objects.filter(pk=session_pk).select_related("project").first()
    summary = SessionSummary.objects.filter(session_id=session_pk).first()
    if session is None or summary is None:
        return {"session": session_pk, "outcome": "gone"}
    SessionSummary.objects.filter(pk=summary.pk).update(queued=False)
    tokens, tool_calls = session.tokens, session.tool_calls
    check_with_gate([session])
    rows = list(session.entries.filter(seq__gt=summary.through, gate_checked=True).order_by("seq"))
    if not rows:
        return {"session": session_pk, "outcome": "nothing new"}
    entries = [entry_from_row(row) for row in rows]
    summary.attempts, summary.error = 0, ""
    if settings.ANTHROPIC_API_KEY:
        summary.selector = "llm"
        try:
            sections = _ask_model(summary, render_new_messages(entries))
        except ModelFailed as exc:
            summary.error = str(exc)
            summary.save(update_fields=["attempts", "error", "selector"])
            return {"session": session_pk, "outcome": "failed", "error": summary.error}
    else:
        summary.selector = "offline"
        rules = OfflineSummary.from_state(summary.state)
        rules.add(entries, cwd=session.cwd)
        summary.state = rules.as_state()
        sections = rules.sections()
    summary.text = render_summary(fit_sections(sections))
    summary.through = rows[-1].seq
    summary.tokens_at, summary.tool_calls_at = tokens, tool_calls
    summary.updates += 1
    summary.updated_at = timezone.now()
    # Not `queued`: a request that came in meanwhile has queued the next update.
    summary.save(
        update_fields=[
            "text",
            "state",
            "selector",
            "through",
            "tokens_at",
            "tool_calls_at",
            "updates",
            "attempts",
            "error",
            "updated_at",
        ]
    )
    return {
        "session": session_pk,
        "outcome": "updated",
        "selector": summary.selector,
        "entries": len(rows),
        "duration_ms": round((time.monotonic() - started) * 1000),
    }


def hook_summary(user, session_id: str) -> str:
    """The summary a SessionStart hook hands a resumed or compacted session of `user`'s,
    within the hook's share of context; "" when there is none or the flag is off."""
    summary = (
        SessionSummary.objects.filter(session__owner=user, session__session_id=session_id)
        .select_related("session__project")
        .first()
    )
    if summary is None or not summary.text.strip():
        return ""
    if not get_flags(summary.session.project)["session_summary"]:
        return ""
    body = summary_for_context(summary.text, HOOK_SUMMARY_CHARS)
    return f"Summary of this session so far (kept by memhub):\n\n{body}"
