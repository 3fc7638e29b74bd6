import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memapp.memdir.freshness import (
    MAX_SURFACED_BYTES,
    MS_PER_DAY,
    RecalledMemory,
    memory_age,
    memory_age_days,
    memory_header,
    render_recalled,
    staleness_note,
    truncate_for_surfacing,
)

NOW = 1_775_000_000_000  # 2026-03-31T23:33:20Z
NOTE_TAIL = (
    "Memories are point-in-time observations, not live state: claims about code behavior or "
    "file:line citations may be outdated. Verify against the current code before asserting "
    "them as fact."
)


@pytest.mark.parametrize(
    ("age_ms", "days", "words"),
    [
        (0, 0, "today"),
        (MS_PER_DAY - 1, 0, "today"),
        (MS_PER_DAY, 1, "yesterday"),
        (2 * MS_PER_DAY - 1, 1, "yesterday"),
        (2 * MS_PER_DAY, 2, "2 days ago"),
        (400 * MS_PER_DAY + 5, 400, "400 days ago"),
        (-5 * MS_PER_DAY, 0, "today"),
    ],
)
def test_age_in_days_and_words(age_ms, days, words):
    assert memory_age_days(NOW - age_ms, NOW) == days
    assert memory_age(NOW - age_ms, NOW) == words


def test_fractional_milliseconds_floor():
    assert memory_age_days(NOW - MS_PER_DAY + 0.5, NOW) == 0
    assert memory_age_days(NOW - MS_PER_DAY - 0.5, NOW) == 1


def test_now_defaults_to_the_clock():
    assert memory_age_days(time.time() * 1000 - 3 * MS_PER_DAY - 1000) == 3
    assert memory_age(time.time() * 1000) == "today"


@given(st.integers(-(10**15), 10**15), st.integers(-(10**15), 10**15))
def test_age_is_never_negative_and_floors(mtime, now):
    days = memory_age_days(mtime, now)
    assert days >= 0
    if now >= mtime:
        assert days * MS_PER_DAY <= now - mtime < (days + 1) * MS_PER_DAY


def test_no_staleness_note_today_or_yesterday():
    assert staleness_note(NOW, NOW) == ""
    assert staleness_note(NOW - MS_PER_DAY, NOW) == ""
    assert staleness_note(NOW + MS_PER_DAY, NOW) == ""


def test_staleness_note_from_two_days():
    assert staleness_note(NOW - 2 * MS_PER_DAY, NOW) == f"This memory is 2 days old. {NOTE_TAIL}"
    assert staleness_note(NOW - 400 * MS_PER_DAY, NOW) == (
        f"This memory is 400 days old. {NOTE_TAIL}"
    )


def test_headers():
    path = "/home/ana/.claude/projects/-home-ana-app/memory/feedback_testing.md"
    assert memory_header(path, NOW, NOW) == f"Memory (saved today): {path}:"
    assert memory_header(path, NOW + 10 * MS_PER_DAY, NOW) == f"Memory (saved today): {path}:"
    assert memory_header(path, NOW - MS_PER_DAY, NOW) == f"Memory (saved yesterday): {path}:"
    assert memory_header(path, NOW - MS_PER_DAY + 1, NOW) == f"Memory (saved today): {path}:"
    assert memory_header(path, NOW - 2 * MS_PER_DAY, NOW) == (
        f"This memory is 2 days old. {NOTE_TAIL}\n\nMemory: {path}:"
    )
    assert memory_header(path, NOW - 400 * MS_PER_DAY, NOW) == (
        f"This memory is 400 days old. {NOTE_TAIL}\n\nMemory: {path}:"
    )


def test_render_of_two_memories():
    memories = [
        RecalledMemory("/m/user_role.md", NOW - 1000, "Ana is a data engineer.\n"),
        RecalledMemory("/m/feedback_testing.md", NOW - 3 * MS_PER_DAY, "Use a real DB.\n\n"),
    ]
    assert render_recalled(memories, NOW) == (
        "<system-reminder>\n"
        "Memory (saved today): /m/user_role.md:\n"
        "\n"
        "Ana is a data engineer.\n"
        "\n"
        f"This memory is 3 days old. {NOTE_TAIL}\n"
        "\n"
        "Memory: /m/feedback_testing.md:\n"
        "\n"
        "Use a real DB.\n"
        "</system-reminder>"
    )


def test_render_of_one_memory_from_yesterday():
    memory = RecalledMemory("team/ci.md", NOW - MS_PER_DAY, "CI runs on push.")
    assert render_recalled(iter([memory]), NOW) == (
        "<system-reminder>\nMemory (saved yesterday): team/ci.md:\n\nCI runs on push.\n"
        "</system-reminder>"
    )


def test_render_of_nothing_is_empty():
    assert render_recalled([], NOW) == ""
    assert render_recalled(iter(()), NOW) == ""


def test_recalled_memory_is_frozen():
    memory = RecalledMemory("a.md", NOW, "x")
    with pytest.raises(AttributeError):
        memory.path = "b.md"


def test_content_within_the_budget_is_unchanged():
    content = "line\n" * 200
    assert truncate_for_surfacing(content, "/m/a.md") == (content, False)
    exact = "x" * 4095 + "\n"
    assert truncate_for_surfacing(exact, "/m/a.md") == (exact, False)
    assert truncate_for_surfacing("", "/m/a.md") == ("", False)


def test_too_many_lines_are_cut():
    content = "".join(f"line {i}\n" for i in range(1, 251))
    text, truncated = truncate_for_surfacing(content, "/m/a.md")
    assert truncated
    assert text == (
        "".join(f"line {i}\n" for i in range(1, 201))
        + "\n> This memory is 250 lines (limit: 200), so only part of it is shown. "
        "Read the full file at /m/a.md before relying on it."
    )


def test_too_many_bytes_are_cut_at_a_newline():
    content = ("y" * 99 + "\n") * 50  # 5,000 bytes, 50 lines
    text, truncated = truncate_for_surfacing(content, "/m/big.md")
    assert truncated
    assert text == (
        ("y" * 99 + "\n")
        * 40
        + "\n> This memory is 4.9KB (limit: 4KB), so only part of it is shown. "
        "Read the full file at /m/big.md before relying on it."
    )


def test_both_caps_fire():
    content = ("z" * 29 + "\n") * 300  # 9,000 bytes, 300 lines
    text, truncated = truncate_for_surfacing(content, "/m/z.md")
    assert truncated
    assert text == (
        ("z" * 29 + "\n")
        * 136
        + "\n> This memory is 300 lines and 8.8KB, so only part of it is shown. "
        "Read the full file at /m/z.md before relying on it."
    )


def test_a_single_long_line_is_cut_hard_on_a_character_boundary():
    content = "é" * 3000  # 6,000 bytes, no newline
    text, truncated = truncate_for_surfacing(content, "/m/e.md", max_bytes=4097)
    body = text.split("\n\n> ")[0]
    assert truncated
    assert body == "é" * 2048
    assert text.endswith("Read the full file at /m/e.md before relying on it.")


def test_custom_caps():
    text, truncated = truncate_for_surfacing("a\nb\nc\n", "a.md", max_lines=2)
    assert truncated
    assert text == (
        "a\nb\n\n> This memory is 3 lines (limit: 2), so only part of it is shown. "
        "Read the full file at a.md before relying on it."
    )


@given(st.text(), st.integers(1, 50), st.integers(4, 300))
def test_surfaced_content_stays_within_the_caps(content, max_lines, max_bytes):
    text, truncated = truncate_for_surfacing(content, "p.md", max_lines, max_bytes)
    if not truncated:
        assert text == content
        return
    body, _, note = text.rpartition("\n\n> This memory is ")
    assert note.endswith("Read the full file at p.md before relying on it.")
    assert len(body.encode("utf-8", "surrogatepass")) <= max_bytes
    assert body.count("\n") < max_lines
    assert content.startswith(body)


def test_the_default_budget_is_4096_bytes():
    content = "w" * 4097
    text, truncated = truncate_for_surfacing(content, "w.md")
    assert truncated
    assert text.startswith("w" * MAX_SURFACED_BYTES + "\n\n> This memory is 4KB (limit: 4KB)")
