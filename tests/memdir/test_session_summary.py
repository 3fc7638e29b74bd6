"""Session summaries' core (docs/design.md §14.10): the triggers, the template, the limits, and
memhub's own rules read incrementally."""

from __future__ import annotations

import pytest

from memapp.memdir.session_summary import (
    SECTIONS,
    OfflineSummary,
    estimate_tokens,
    fit_sections,
    parse_summary,
    render_new_messages,
    render_summary,
    summary_due,
    summary_for_context,
)
from memapp.memdir.transcripts import EntryError, parse_entry
from tests.coding_sessions import FIRST_REQUESTS, FIRST_TASK, LATER_REQUESTS, grow
from tests.transcripts import Transcript


def entries_of(transcript: Transcript, start: int = 0):
    kept = []
    for raw in transcript.entries[start:]:
        try:
            kept.append(parse_entry(raw))
        except EntryError:
            continue
    return kept


@pytest.mark.parametrize(
    ("built", "tokens", "tokens_at", "calls", "calls_at", "at_rest", "due"),
    [
        (False, 9_999, 0, 50, 0, True, False),  # the first at ~10,000 tokens
        (False, 10_000, 0, 0, 0, False, True),
        (True, 14_999, 10_000, 9, 0, True, False),  # then 5,000 more …
        (True, 15_000, 10_000, 2, 0, False, False),  # … and 3 tool calls
        (True, 15_000, 10_000, 3, 0, False, True),
        (True, 15_000, 10_000, 12, 10, True, True),  # … or a turn that ended without one
    ],
)
def test_the_triggers_are_claude_codes(built, tokens, tokens_at, calls, calls_at, at_rest, due):
    assert (
        summary_due(
            built=built,
            tokens=tokens,
            tokens_at=tokens_at,
            tool_calls=calls,
            tool_calls_at=calls_at,
            at_rest=at_rest,
        )
        is due
    )


def test_a_summary_has_the_fixed_sections_in_order_and_reads_back():
    text = render_summary({"Worklog": "- one", "Session Title": "Rate limits"})
    headings = [line[2:] for line in text.splitlines() if line.startswith("# ")]
    assert headings == list(SECTIONS)
    assert parse_summary(text)["Session Title"] == "Rate limits"
    assert parse_summary(text)["Worklog"] == "- one"
    with pytest.raises(ValueError, match="none of the sections"):
        parse_summary("Sure! Here is the summary.")


def test_sections_over_their_limits_are_folded_oldest_lines_first():
    worklog = "\n".join(f"- step {n}: " + "x" * 60 for n in range(2_000))
    sections = {name: "- " + "y" * 20_000 for name in SECTIONS if name != "Worklog"}
    fitted = fit_sections({**sections, "Worklog": worklog})
    assert all(estimate_tokens(body) <= 2_000 for body in fitted.values())
    assert estimate_tokens(render_summary(fitted)) <= 12_000
    assert fitted["Worklog"].splitlines()[-1].startswith("- step 1999")  # newest kept
    assert fitted["Worklog"].splitlines()[0].endswith("earlier lines folded")


def test_memhubs_rules_fill_what_rules_can():
    t = Transcript()
    grow(t, 12_000, FIRST_REQUESTS)
    rules = OfflineSummary()
    rules.add(entries_of(t), cwd=t.cwd)
    sections = parse_summary(render_summary(fit_sections(rules.sections())))
    assert sections["Session Title"].startswith("Add rate limiting to the widgets API")
    assert sections["Task specification"] == FIRST_TASK
    assert "- `widgets/ratelimit.py` (read, edited)" in sections["Files and Functions"]
    assert "- `pytest tests/test_ratelimit.py -q`" in sections["Workflow"]
    errors = sections["Errors & Corrections"].splitlines()
    assert errors[0].startswith("- Bash `pytest tests/test_settings.py -q`: Exit code 1 FAILED")
    assert errors[0].endswith(
        "→ test_burst_3 fails: the window counted the boundary twice. Fixing the key."
    )
    assert [line[8:] for line in sections["Worklog"].splitlines()] == FIRST_REQUESTS
    assert sections["Learnings"] == ""  # what only a model can say is left empty


def test_reading_from_a_cursor_gives_the_summary_reading_all_at_once_gives():
    t = Transcript()
    n = grow(t, 12_000, FIRST_REQUESTS)
    cursor = len(t.entries)
    grow(t, 28_000, LATER_REQUESTS, start=n)
    whole, split = OfflineSummary(), OfflineSummary()
    whole.add(entries_of(t), cwd=t.cwd)
    split.add(entries_of(t)[: len(entries_of(t, 0)) - len(entries_of(t, cursor))], cwd=t.cwd)
    split = OfflineSummary.from_state(split.as_state())  # kept as JSON between updates
    split.add(entries_of(t, cursor), cwd=t.cwd)
    assert split.sections() == whole.sections()


def test_the_model_reads_prose_tool_calls_and_errors_not_tool_output():
    t = Transcript()
    t.user("Why does the burst test fail?")
    call = t.tool_use("Bash", {"command": "pytest -q"})
    t.tool_result(call, "Exit code 1\nFAILED test_burst", error=True)
    call = t.tool_use("Read", {"file_path": "/src/a.py"})
    t.tool_result(call, "SECRET_SOURCE_LINE = 1")
    assert render_new_messages(entries_of(t)).splitlines() == [
        "[user] Why does the burst test fail?",
        "[tool call] Bash: pytest -q",
        "[tool error] Exit code 1 FAILED test_burst",
        "[tool call] Read: /src/a.py",
    ]


def test_the_hooks_share_keeps_the_sections_a_resumed_agent_needs_first():
    sections = {name: f"{name} " + "z" * 3_000 for name in SECTIONS}
    short = summary_for_context(render_summary(sections), 9_000)
    assert len(short) <= 9_000
    assert short.startswith("# Session Title\nSession Title")
    assert "# Current State" in short and "# Task specification" in short
    assert "# Worklog" not in short
