"""Relative dates made absolute against the day a memory was written (docs/design.md §14.7):
every form the lint flags either becomes a date the lint no longer flags, or is left as written
and reported; code is never touched."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memapp.memdir.absolute_dates import make_dates_absolute
from memapp.memdir.lint import relative_dates

THURSDAY = datetime.date(2026, 3, 5)


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("today", "2026-03-05"),
        ("Tonight", "the night of 2026-03-05"),
        ("tomorrow morning", "the morning of 2026-03-06"),
        ("yesterday", "2026-03-04"),
        ("the day after tomorrow", "2026-03-07"),
        ("the week after next", "the week of 2026-03-16"),
        ("two days ago", "on 2026-03-03"),
        ("3 weeks ago", "on 2026-02-12"),
        ("a week from tomorrow", "on 2026-03-13"),
        ("in two weeks", "on 2026-03-19"),
        ("in 3 months", "on 2026-06-05"),
        ("end of this week", "Friday 2026-03-06"),
        ("start of next week", "Monday 2026-03-09"),
        ("end of next month", "2026-04-30"),
        ("end of this quarter", "2026-03-31"),
        ("next Tuesday", "Tuesday 2026-03-10"),
        ("last Friday evening", "Friday 2026-02-27 (evening)"),
        ("this Monday", "Monday 2026-03-02"),
        ("this coming Thursday", "Thursday 2026-03-12"),
        ("Thursday", "Thursday 2026-03-05"),
        ("Friday afternoon", "Friday 2026-03-06 (afternoon)"),
        ("last night", "the night of 2026-03-04"),
        ("next week", "the week of 2026-03-09"),
        ("last week", "the week of 2026-02-23"),
        ("next weekend", "the weekend of 2026-03-14"),
        ("next month", "April 2026"),
        ("this quarter", "Q1 2026"),
        ("next year", "2027"),
        ("EOW", "Friday 2026-03-06"),
        ("eom", "2026-03-31"),
    ],
)
def test_each_form_becomes_the_date_it_meant_and_the_lint_is_satisfied(written, meant):
    text, rewrites = make_dates_absolute(f"Freeze {written}.", THURSDAY)
    assert text == f"Freeze {meant}."
    assert [(r.expression, r.replacement) for r in rewrites] == [(written, meant)]
    assert relative_dates(text) == []


@pytest.mark.parametrize(
    "vague", ["a few days ago", "in a few weeks", "next sprint", "end of the sprint"]
)
def test_vague_expressions_are_left_and_reported(vague):
    text, rewrites = make_dates_absolute(f"Shipped {vague}.", THURSDAY)
    assert text == f"Shipped {vague}."
    assert [(r.expression, r.replacement) for r in rewrites] == [(vague, None)]


@pytest.mark.parametrize(
    "sentence",
    [
        "On-call coverage is thin at the end of the week.",
        "On-call coverage is thin at end of week.",
        "Invoices go out at the start of the month.",
        "Demo every Friday, so Friday afternoon is quiet.",
        "Each sprint ends with a review on Friday.",
        "We deploy on Mondays, so nothing merges the night before: Sunday evening.",
        "Weekly sync on Tuesday.",
        "The backup runs every night, tomorrow included.",
        "Releases usually slip to next week.",
        "Standups happen once a week, on Thursday.",
        "Triage is per sprint: the end of next month at most.",
    ],
)
def test_a_recurring_phrase_is_never_pinned_to_one_date(sentence):
    text, rewrites = make_dates_absolute(sentence, THURSDAY)
    assert text == sentence
    assert rewrites and all(r.replacement is None and r.recurring for r in rewrites)


@pytest.mark.parametrize(
    ("written", "one_day"),
    [
        ("tomorrow", True),
        ("yesterday evening", True),
        ("next Tuesday", True),
        ("Thursday", True),
        ("two days ago", True),
        ("3 hours ago", True),
        ("next week", False),
        ("in two weeks", False),
        ("end of next month", False),
        ("end of this week", False),
        ("next month", False),
        ("EOW", False),
    ],
)
def test_only_a_phrase_naming_one_day_is_sure_of_its_date(written, one_day):
    _, [rewrite] = make_dates_absolute(f"The freeze starts {written}.", THURSDAY)
    assert rewrite.replacement is not None
    assert rewrite.one_day is one_day


def test_a_habit_in_one_sentence_leaves_the_next_sentence_resolved():
    text, _ = make_dates_absolute("We deploy every Friday. The freeze is next Tuesday.", THURSDAY)
    assert text == "We deploy every Friday. The freeze is Tuesday 2026-03-10."


def test_code_habits_and_absolute_dates_are_left_alone():
    text = (
        "Run `deploy --at tomorrow` every Monday.\n```\nsleep until next week\n```\n"
        "Freeze on Thursday, 2026-03-05; we deploy Mondays.\n"
    )
    assert make_dates_absolute(text, THURSDAY) == (text, [])


def test_several_expressions_in_one_body_keep_the_rest_byte_for_byte():
    body = "Decided yesterday: ship next Tuesday.\r\n\r\n**Why:** launch is in two weeks.\r\n"
    text, rewrites = make_dates_absolute(body, THURSDAY)
    assert text == (
        "Decided 2026-03-04: ship Tuesday 2026-03-10.\r\n\r\n**Why:** launch is on 2026-03-19.\r\n"
    )
    assert len(rewrites) == 3


EXPRESSIONS = [
    "today",
    "tomorrow",
    "yesterday evening",
    "next Friday",
    "last week",
    "two days ago",
    "in 4 weeks",
    "end of this month",
    "next month",
    "Sunday",
]


@given(
    st.lists(st.sampled_from([*EXPRESSIONS, "ships", "`x`", "the API", "\n"]), max_size=12),
    st.dates(min_value=datetime.date(2000, 1, 1), max_value=datetime.date(2100, 12, 31)),
)
def test_resolvable_expressions_never_leave_a_relative_date(words, on):
    text, _ = make_dates_absolute(" ".join(words), on)
    assert relative_dates(text) == []


def test_the_article_of_a_period_goes_with_it():
    text, _ = make_dates_absolute("Until the end of this month, then the next week.", THURSDAY)
    assert text == "Until 2026-03-31, then the week of 2026-03-09."
