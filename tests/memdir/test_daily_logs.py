"""Daily logs in the core (docs/design.md §14.8): which keys are logs, what a line may hold, how
entries read, appending atomically without touching earlier bytes, and the lines one copy of a
log lacks from another."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memapp.memdir.daily_logs import (
    LogLineRejected,
    append_to_log,
    check_log_line,
    daily_log_path,
    format_log_line,
    list_logs,
    log_day,
    missing_lines,
    parse_log,
    read_log,
)
from memapp.memdir.keys import PathTraversalError
from tests.memdir.test_secret_rules import fake_tokens

MARCH_5 = datetime.date(2026, 3, 5)
KEY = "logs/2026/03/2026-03-05.md"


def test_a_log_key_names_its_day_and_nothing_else_is_one():
    assert daily_log_path(MARCH_5) == KEY
    assert log_day(KEY) == MARCH_5
    for key in [
        "logs/2026/04/2026-03-05.md",  # folder and date disagree
        "logs/2026/02/2026-02-30.md",  # no such day
        "logs/2026/03/2026-3-5.md",
        "logs/2026/03/2026-03-05.txt",
        "logs/2026-03-05.md",
        "notes/2026/03/2026-03-05.md",
        "logs/2026/03/../03/2026-03-05.md",
    ]:
        assert log_day(key) is None, key


def test_a_line_is_written_as_the_prompt_asks():
    assert format_log_line("  Deploys are on Fridays. ", "9:05", "project") == (
        "- 09:05 [project] Deploys are on Fridays."
    )
    assert format_log_line("Plain note") == "- Plain note"
    with pytest.raises(LogLineRejected):
        format_log_line("x", "25:00")
    with pytest.raises(LogLineRejected):
        format_log_line("x", None, "opinion")


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("- ", "invalid"),
        ("- first\n- second", "invalid"),
        ("- a\u2028b", "invalid"),
        ("- a\0b", "binary_content"),
        ("- " + "x" * 4095, "entry_too_large"),
        ("- " + "é" * 2048, "entry_too_large"),  # 4 KB counted in bytes
    ],
)
def test_bad_lines_are_refused_with_the_reason(line, code):
    with pytest.raises(LogLineRejected) as caught:
        check_log_line(line)
    assert caught.value.code == code


def test_a_line_of_exactly_4_kb_is_fine():
    check_log_line("- " + "x" * 4094)


def test_a_line_with_a_secret_is_refused_naming_the_rule_not_the_value():
    token = fake_tokens()["github-pat"]
    with pytest.raises(LogLineRejected) as caught:
        check_log_line(f"- 10:00 the CI token is {token}")
    assert caught.value.code == "secret_detected"
    assert "GitHub" in str(caught.value) and token not in str(caught.value)


def test_entries_are_the_bullets_with_their_time_and_type():
    text = (
        "# 2026-03-05\n\n- 09:05 [project] Freeze starts next Tuesday.\n"
        "- [feedback] Never mock the DB. Why: it hid a bug.\n"
        "* 14:30:12 plain entry\nprose that is no entry\n- [opinion] odd tag\n-\n"
    )
    entries = parse_log(text, KEY)
    assert [(e.number, e.time, e.type, e.text) for e in entries] == [
        (3, "09:05", "project", "Freeze starts next Tuesday."),
        (4, None, "feedback", "Never mock the DB. Why: it hid a bug."),
        (5, "14:30", None, "plain entry"),
        (7, None, None, "[opinion] odd tag"),
    ]
    assert {e.day for e in entries} == {MARCH_5}


def test_appending_keeps_every_earlier_byte_and_creates_the_folders(tmp_path):
    after = append_to_log(tmp_path, KEY, ["- 09:00 first"])
    assert after == b"- 09:00 first\n"
    path = tmp_path / KEY
    path.write_bytes(b"- 09:00 first\n- 09:30 no newline at the end")
    append_to_log(tmp_path, KEY, ["- 10:00 second", "- 10:01 third"])
    assert path.read_text() == (
        "- 09:00 first\n- 09:30 no newline at the end\n- 10:00 second\n- 10:01 third\n"
    )
    assert read_log(tmp_path, KEY) == path.read_text()
    assert read_log(tmp_path, "logs/2026/03/2026-03-06.md") == ""


def test_a_line_the_agent_appends_meanwhile_is_kept(tmp_path):
    """The agent keeps its own handle on today's log open for appending: memhub appends to the
    same file instead of replacing it, so the agent's next line does not go to a file that is
    no longer there."""
    append_to_log(tmp_path, KEY, ["- 09:00 first"])
    with (tmp_path / KEY).open("a", encoding="utf-8") as agent:
        append_to_log(tmp_path, KEY, ["- 09:30 from memhub"])
        agent.write("- 09:31 from the agent\n")
    assert read_log(tmp_path, KEY).splitlines() == [
        "- 09:00 first",
        "- 09:30 from memhub",
        "- 09:31 from the agent",
    ]


def test_a_log_behind_a_symlink_out_of_the_store_is_never_written(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    store = tmp_path / "memory"
    store.mkdir()
    (store / "logs").symlink_to(outside)
    with pytest.raises(PathTraversalError):
        append_to_log(store, KEY, ["- x"])
    assert not any(outside.rglob("*"))
    with pytest.raises(ValueError):
        append_to_log(store, "notes/x.md", ["- x"])


def test_listing_finds_logs_oldest_first_and_skips_what_is_not_one(tmp_path):
    for key in [KEY, "logs/2025/12/2025-12-31.md", "logs/2026/03/2026-03-04.md"]:
        append_to_log(tmp_path, key, ["- x"])
    (tmp_path / "logs/2026/03/notes.md").write_text("- not a log")
    (tmp_path / "logs/2026/03/2026-03-07.md").mkdir()
    (tmp_path / "logs/2026/03/2026-03-08.md").symlink_to(tmp_path / KEY)
    (tmp_path / "logs/2026/13").mkdir()
    assert [key for key, _ in list_logs(tmp_path)] == [
        "logs/2025/12/2025-12-31.md",
        "logs/2026/03/2026-03-04.md",
        KEY,
    ]
    assert list_logs(tmp_path / "nowhere") == []


def test_missing_lines_are_what_the_other_copy_has_more_of():
    local = "- a\n- b\n\n- b\n"
    server = "- a\n- c\n- b\n"
    assert missing_lines(local, server) == ["- c"]
    assert missing_lines(server, local) == ["- b"]  # written twice on purpose
    assert missing_lines(local, local) == []


@given(st.lists(st.sampled_from(["- a", "- b", "- c", "", "- d  "]), max_size=12), st.data())
def test_appending_the_missing_lines_makes_both_copies_hold_the_same(lines, data):
    mine = "\n".join(lines)
    theirs = "\n".join(data.draw(st.lists(st.sampled_from(["- a", "- b", "- e"]), max_size=8)))
    merged_mine = mine + "\n" + "\n".join(missing_lines(mine, theirs))
    merged_theirs = theirs + "\n" + "\n".join(missing_lines(theirs, mine))
    assert missing_lines(merged_mine, merged_theirs) == []
    assert missing_lines(merged_theirs, merged_mine) == []
