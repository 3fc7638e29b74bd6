"""Consolidation and distillation in the core (docs/design.md §14.7–§14.8): the offline pass
proposes what rules can decide, distillation turns log entries into memories, and the model's
index change is taken apart from its other changes."""

from __future__ import annotations

import pytest

from memapp.memdir.consolidation import (
    DatedMemory,
    build_consolidation_request,
    offline_consolidation,
    offline_distillation,
    replaced_unsure_dates,
    take_index_change,
)
from memapp.memdir.daily_logs import parse_log
from memapp.memdir.lint import relative_dates
from tests.memdir.test_index_plan import DAY, entries_of, topic
from tests.memdir.test_secret_rules import fake_tokens


def test_the_index_change_is_taken_apart_from_the_others():
    token = fake_tokens()["github-pat"]
    raw = [
        {"action": "update", "file": "a.md", "name": "A"},
        {"action": "update", "file": "MEMORY.md", "body": "- [A](a.md) — a\n", "reason": "tidy"},
        {"action": "update", "file": "MEMORY.md", "body": "again"},
        {"action": "delete", "file": "./MEMORY.md"},
        {"action": "update", "file": "MEMORY.md", "body": f"token {token}"},
    ]
    others, index, dropped = take_index_change(raw)
    assert others == [raw[0]] and index == "- [A](a.md) — a\n"
    assert [(d.index, d.reason) for d in dropped] == [
        (2, "a second change to the same file"),
        (3, "MEMORY.md can only be updated as a whole"),
        (4, "holds what looks like a secret (GitHub personal access token)"),
    ]
    assert take_index_change("nope") == ("nope", None, [])


def test_offline_consolidation_fixes_dates_repairs_the_index_and_flags_duplicates():
    files = {
        "project_freeze.md": topic(
            "project_freeze.md", "Code freeze starts next Tuesday", 0, "Freeze"
        ),
        "feedback_db.md": topic("feedback_db.md", "Integration tests must hit a real database", 3),
        "feedback_db_again.md": topic(
            "feedback_db_again.md", "Integration tests must hit the real database", 9
        ),
    }
    index = "- [Freeze](project_freeze.md) — freeze next Tuesday\n- [Old](old.md) — gone\n"
    dated = [
        DatedMemory(
            "project_freeze.md",
            "Freeze",
            "Code freeze starts next Tuesday",
            "project",
            "Freeze from next Tuesday until the end of the month.\n",
            DAY,
        )
    ]
    result = offline_consolidation(
        scope="private", index=index, files=files, dated=dated, caps=(200, 25_000)
    )
    update, index_change = result.changes
    assert (update.action, update.file) == ("update", "project_freeze.md")
    assert update.description == "Code freeze starts Tuesday 2026-03-10"
    assert update.body == "Freeze from Tuesday 2026-03-10 until the end of the month.\n"
    assert "the file was written on 2026-03-05" in update.reason
    assert result.unresolved == [("project_freeze.md", "end of the month")]
    assert result.unsure == {}  # "next Tuesday" names one day
    assert index_change.file == "MEMORY.md"
    assert entries_of(index_change.body) == [
        "project_freeze.md",
        "feedback_db.md",
        "feedback_db_again.md",
    ]
    assert relative_dates(index_change.body) == []
    assert "Code freeze starts Tuesday 2026-03-10" in index_change.body
    assert [(a, b) for a, b, _ in result.duplicates] == [("feedback_db.md", "feedback_db_again.md")]


@pytest.mark.parametrize(
    ("body", "fixed", "unsure"),
    [
        ("On-call coverage is thin at the end of the week.\n", None, False),
        ("Deploys go out every Friday; nobody deploys that evening.\n", None, False),
        ("We deploy on Mondays, never on Friday afternoon.\n", None, False),
        ("Retro each sprint, demo on Thursday.\n", None, False),
        ("Weekly sync on Tuesday.\n", None, False),
        ("Launch is tomorrow.\n", "Launch is 2026-03-06.\n", False),
        ("Launch is next Tuesday.\n", "Launch is Tuesday 2026-03-10.\n", False),
        ("Launch is next month.\n", "Launch is April 2026.\n", True),
        ("Launch is in two weeks.\n", "Launch is on 2026-03-19.\n", True),
    ],
)
def test_offline_date_fixes_never_pin_a_habit_and_tick_only_one_named_day(body, fixed, unsure):
    files = {"project_oncall.md": topic("project_oncall.md", "On-call", 0, "On-call")}
    dated = [DatedMemory("project_oncall.md", "On-call", "On-call", "project", body, DAY)]
    result = offline_consolidation(
        scope="private",
        index="- [On-call](project_oncall.md) — On-call\n",
        files=files,
        dated=dated,
        caps=(200, 25_000),
    )
    updates = [c for c in result.changes if c.file == "project_oncall.md"]
    assert [c.body for c in updates] == ([] if fixed is None else [fixed])
    assert ("project_oncall.md" in result.unsure) is unsure


def test_a_store_in_good_order_gets_no_offline_changes():
    files = {"a.md": topic("a.md", "Alpha")}
    result = offline_consolidation(
        scope="private", index="- [a](a.md) — Alpha\n", files=files, dated=[], caps=(200, 25_000)
    )
    assert result.changes == [] and result.duplicates == []


def test_offline_distillation_turns_new_entries_into_memories_and_index_lines():
    log = (
        "- 09:05 [project] Code freeze starts next Tuesday. Why: the release is on 2026-03-20.\n"
        "- 09:10 [feedback] Integration tests must hit a real database\n"
        "- 10:00 untagged note about the staging host naming scheme\n"
        "- 10:05 [feedback] Integration tests must hit the real database\n"
    )
    entries = parse_log(log, "logs/2026/03/2026-03-05.md")
    taken: list[str] = []

    def name_file(name: str, memory_type: str) -> str:
        key = f"{memory_type}_{len(taken)}.md"
        taken.append(key)
        return key

    result = offline_distillation(
        scope="private",
        entries=entries,
        existing=[("user_role.md", "Alice is a backend engineer")],
        index="- [Role](user_role.md) — who Alice is\n",
        files={"user_role.md": topic("user_role.md", "Alice is a backend engineer", 30)},
        name_file=name_file,
        caps=(200, 25_000),
        today=DAY,
    )
    *creates, index = result.changes
    assert [(c.action, c.type) for c in creates] == [
        ("create", "project"),
        ("create", "feedback"),
        ("create", "project"),
    ]
    freeze = creates[0]
    assert freeze.description == "Code freeze starts Tuesday 2026-03-10."
    assert "**Why:** the release is on 2026-03-20." in freeze.body
    assert "(From the daily log of 2026-03-05 09:05.)" in freeze.body
    assert result.skipped == [("logs/2026/03/2026-03-05.md:4", "already said by feedback_1.md")]
    assert entries_of(index.body) == ["user_role.md", *[c.file for c in creates]]
    assert result.unsure == {}  # "next Tuesday" names one day


def test_offline_distillation_leaves_a_date_it_guessed_for_a_person_to_tick():
    log = "- 09:05 [project] Billing moves to the new cluster next month.\n"
    result = offline_distillation(
        scope="private",
        entries=parse_log(log, "logs/2026/03/2026-03-05.md"),
        existing=[],
        index="",
        files={},
        name_file=lambda name, memory_type: "project_billing.md",
        caps=(200, 25_000),
        today=DAY,
    )
    assert "April 2026" in result.changes[0].description
    assert "“next month” as April 2026" in result.unsure["project_billing.md"]


def test_offline_distillation_never_turns_a_secret_into_a_change():
    log = (
        "- 09:05 [reference] The backup bucket uses AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n"
        "- 09:06 [reference] and DB_PASSWORD=Sup3rSecretPa55x for the replica\n"
        "- 09:10 [feedback] Integration tests must hit a real database\n"
    )
    entries = parse_log(log, "logs/2026/03/2026-03-05.md")
    result = offline_distillation(
        scope="team",
        entries=entries,
        existing=[],
        index="",
        files={},
        name_file=lambda name, memory_type: f"{memory_type}_{len(name)}.md",
        caps=(200, 25_000),
        today=DAY,
    )
    written = repr(result.changes)
    assert "AKIAIOSFODNN7EXAMPLE" not in written and "Sup3rSecretPa55x" not in written
    assert [c.type for c in result.changes if c.action == "create"] == ["feedback"]
    assert result.skipped == [
        (f"logs/2026/03/2026-03-05.md:{n}", "holds what looks like a secret "
         "(Secret assigned to a secret-named key)")
        for n in (1, 2)
    ]  # fmt: skip


def test_the_consolidation_request_follows_the_four_phases():
    text = build_consolidation_request(
        today=DAY,
        caps=(200, 25_000),
        index="- [A](a.md) — a\n",
        manifest="- [user] a.md (2026-03-01T10:00:00.000Z): about a",
        bodies=[("a.md", "---\nname: A\n---\nBody of a\n")],
        findings=["relative dates: project_x.md (“next Tuesday”)"],
        since="2026-03-04 02:00 UTC",
        sessions="### Session s1\n[user] we moved the freeze",
        logs="",
    )
    order = [
        "Today is 2026-03-05",
        "# Phase 1, orient",
        "## The index (MEMORY.md)",
        "## Manifest of the topic files",
        "### a.md",
        "# Phase 2, gather",
        "- relative dates: project_x.md",
        "## Sessions since the last consolidation (2026-03-04 02:00 UTC)",
        "[user] we moved the freeze",
        "## Daily logs since the last consolidation",
        "# Phases 3 and 4",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    ("old", "new", "unsure"),
    [
        ("Thin at the end of the week.", "Thin at Friday 2026-11-27.", "“end of the week”"),
        ("Launch next month.", "Launch in April 2026.", "“next month”"),
        ("Deploy every Friday, Friday evening.", "Deploy 2026-03-06 evening.", "“Friday evening”"),
        ("Launch tomorrow.", "Launch 2026-03-06.", ""),
        ("Thin at the end of the week.", "Thin at the end of the week; more staff.", ""),
    ],
)
def test_a_models_rewrite_that_drops_an_unsure_date_is_left_to_tick(old, new, unsure):
    why = replaced_unsure_dates(old, new, DAY)
    assert (unsure in why) if unsure else why == ""
