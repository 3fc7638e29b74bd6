"""Consolidation as a task (docs/design.md §14.7), on a real store with the issue's problems:
offline and with the real SDK against the fake Messages API, each ending, after one approved
proposal, in a store whose index is within its caps, names only files that exist and holds no
relative date; the lock taken, released and restored; failures shown."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.store_proposals import do_apply_store_proposal, needs_tick
from memapp.lifecycle.tasks import request_consolidation
from memapp.memdir.consolidate_lock import LOCK_NAME, read_lock
from memapp.stores.models import Blob, Event
from memapp.stores.projects import resolve_store
from tests.lifecycle.conftest import PROJECT, consolidate_now
from tests.lifecycle.untidy import index_problems, make_untidy

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits


@pytest.fixture
def untidy(alice):
    store = resolve_store(alice, PROJECT, "private")
    make_untidy(Path(store.path))
    return store


def only_proposal(kind: str = "consolidation") -> Proposal:
    proposals = list(Proposal.objects.filter(kind=kind))
    assert len(proposals) == 1, proposals
    return proposals[0]


def test_offline_one_approved_proposal_leaves_a_tidy_index_and_dates_it_can_be_sure_of(
    alice, untidy
):
    root = Path(untidy.path)
    before = index_problems(root)
    assert before["over_lines"] and before["over_bytes"]
    assert before["dangling"] == ["gone.md", "old/notes.md"]
    assert before["doubled"] == ["feedback_db.md"]
    assert before["relative_dates"] == ["project_freeze.md", "MEMORY.md"]

    run = consolidate_now(untidy, alice)
    assert (run.gate, run.outcome, run.selector) == ("passed", "proposed", "offline")
    proposal = only_proposal()
    keys = [c.key for c in proposal.changes.order_by("position")]
    assert keys == ["project_freeze.md", "MEMORY.md"]
    duplicates = run.findings["consolidation"]["duplicates"]
    assert [pair[:2] for pair in duplicates] == [["feedback_db.md", "feedback_db_again.md"]]

    # "the end of the month" may be every month's: left as written, for a person to settle.
    assert run.findings["consolidation"]["unresolved"] == [
        ["project_freeze.md", "end of the month"]
    ]

    result = do_apply_store_proposal(proposal, alice)
    assert result.applied == keys
    assert index_problems(root) == {
        "over_lines": False,
        "over_bytes": False,
        "dangling": [],
        "doubled": [],
        "relative_dates": ["project_freeze.md"],
    }
    freeze = (root / "project_freeze.md").read_text()
    assert "starts Tuesday 2026-03-10 and lasts until the end of the month" in freeze
    assert untidy.files.get(path="project_freeze.md").relative_dates == ["end of the month"]
    proposal.refresh_from_db()
    assert proposal.status == "applied"
    # The index it rewrote is a version in MEMORY.md's history, by the approver, via proposal.
    latest = untidy.versions.filter(path="MEMORY.md").first()
    assert (latest.user, latest.via) == (alice, "proposal")
    assert bytes(Blob.objects.get(sha256=latest.sha256).data) == (root / "MEMORY.md").read_bytes()


def test_the_model_gets_the_four_phases_in_one_forced_call_and_its_merge_is_applied(
    alice, untidy, model
):
    root = Path(untidy.path)
    sloppy_index = (
        (root / "MEMORY.md")
        .read_text()
        .replace("- [Real database again](feedback_db_again.md) — never mocks\n", "")
    )
    model.propose(
        [
            {
                "action": "update",
                "scope": "private",
                "file": "feedback_db.md",
                "name": "Real database",
                "description": "Integration tests must hit a real database, never mocks",
                "type": "feedback",
                "body": "Use the real database, never mocks.\n\n**Why:** mocks hid a broken "
                "migration (the March incident).\n**How to apply:** every integration test.\n",
                "reason": "merges feedback_db_again.md into this one",
            },
            {
                "action": "delete",
                "scope": "private",
                "file": "feedback_db_again.md",
                "reason": "merged into feedback_db.md",
            },
            {
                "action": "update",
                "scope": "private",
                "file": "project_freeze.md",
                "name": "Code freeze",
                "description": "Code freeze starts 2026-03-10",
                "type": "project",
                "body": "The code freeze starts on 2026-03-10 and lasts until 2026-03-31.\n\n"
                "**Why:** the release is cut then.\n**How to apply:** no merges after it.\n",
                "reason": "absolute dates",
            },
            {
                "action": "update",
                "scope": "private",
                "file": "MEMORY.md",
                "body": sloppy_index,
                "reason": "one line per memory",
            },
        ]
    )
    run = consolidate_now(untidy, alice)
    assert (run.outcome, run.selector) == ("proposed", "llm")

    assert len(model.requests) == 1
    body = model.requests[0].body
    assert [tool["name"] for tool in body["tools"]] == ["propose_memory_changes"]
    assert body["tool_choice"] == {"type": "tool", "name": "propose_memory_changes"}
    assert "four phases" in body["system"] and "Merge over create" in body["system"]
    text = body["messages"][0]["content"]
    for part in [
        "# Phase 1, orient",
        "- [Code freeze](project_freeze.md) — freeze starts next Tuesday",
        "[project] project_freeze.md (2026-03-05T10:00:00.000Z): Code freeze starts next Tuesday",
        "### project_freeze.md",
        "# Phase 2, gather",
        "entries pointing at missing files: gone.md, old/notes.md",
        "relative dates in project_freeze.md: “next Tuesday”",
        "near-duplicates: feedback_db.md and feedback_db_again.md",
        "over its caps",
    ]:
        assert part in text, part

    proposal = only_proposal()
    index = proposal.changes.get(key="MEMORY.md")
    assert "memhub adjusted it" in index.reason
    freeze = proposal.changes.get(key="project_freeze.md")  # "the end of the month": a guess
    assert [c["code"] for c in freeze.checks] == ["date_fix"] and needs_tick(freeze)
    do_apply_store_proposal(proposal, alice, [c.pk for c in proposal.changes.all()])
    assert not (root / "feedback_db_again.md").exists()
    assert "March incident" in (root / "feedback_db.md").read_text()
    assert index_problems(root) == {
        "over_lines": False,
        "over_bytes": False,
        "dangling": [],
        "doubled": [],
        "relative_dates": [],
    }


def test_a_run_that_takes_the_lock_leaves_its_start_as_the_last_consolidation(alice, untidy):
    started = time.time()
    consolidate_now(untidy, alice)
    state = read_lock(untidy.path)
    assert state.pid is None and started - 1 <= state.mtime <= time.time()


def test_a_failing_model_fails_the_run_and_restores_the_lock(alice, untidy, model):
    lock = Path(untidy.path) / LOCK_NAME
    lock.write_text("")
    os.utime(lock, (1_700_000_000, 1_700_000_000))
    model.overloaded()
    run = consolidate_now(untidy, alice)
    assert (run.status, run.outcome, run.attempts) == ("failed", "failed", 2)
    assert "OverloadedError" in run.error or "529" in run.error
    assert lock.stat().st_mtime == 1_700_000_000
    assert not Proposal.objects.exists()
    event = Event.objects.get(kind="consolidation_run")
    assert event.fields["outcome"] == "failed" and event.fields["gate"] == "passed"


def test_a_live_pid_holding_the_lock_skips_the_run(alice, untidy):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = Path(untidy.path) / LOCK_NAME
        lock.write_text(str(holder.pid))
        run = consolidate_now(untidy, alice)
    finally:
        holder.kill()
        holder.wait()
    assert (run.gate, run.outcome, run.lock_holder) == ("locked", "skipped", holder.pid)
    assert lock.read_text() == str(holder.pid)
    assert not Proposal.objects.exists()
    event = Event.objects.get(kind="consolidation_run")
    assert (event.fields["gate"], event.fields["lock_holder"]) == ("locked", holder.pid)


def test_a_dead_pid_is_reclaimed(alice, untidy):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (Path(untidy.path) / LOCK_NAME).write_text(str(gone.pid))
    run = consolidate_now(untidy, alice)
    assert (run.gate, run.outcome) == ("passed", "proposed")


def test_a_lock_that_is_no_number_is_stale_and_noted(alice, untidy):
    (Path(untidy.path) / LOCK_NAME).write_text("held by me, says a human")
    run = consolidate_now(untidy, alice)
    assert (run.gate, run.lock_problem) == ("passed", "does not hold a PID")


def test_the_flag_off_skips_even_a_manual_run(alice, untidy):
    from memapp.stores.flags import set_flag

    set_flag("consolidation", False, user=alice)
    run = consolidate_now(untidy, alice)
    assert (run.gate, run.outcome) == ("flag_off", "skipped")
    assert not (Path(untidy.path) / LOCK_NAME).exists()


def test_a_second_request_while_one_waits_is_the_same_run(alice, untidy):
    first = request_consolidation(untidy, trigger="manual", requested_by=alice)
    second = request_consolidation(untidy, trigger="schedule")
    assert first[0] == "queued" and second == ("busy", first[1])


def test_a_store_in_good_order_gets_no_proposal(alice):
    store = resolve_store(alice, PROJECT, "private")
    run = consolidate_now(store, alice)
    assert (run.gate, run.outcome) == ("passed", "nothing")
    assert not Proposal.objects.exists()


def test_the_event_records_the_index_before_and_after_and_stale_memories(alice, untidy):
    consolidate_now(untidy, alice)
    fields = Event.objects.get(kind="consolidation_run").fields
    assert fields["trigger"] == "manual" and fields["outcome"] == "proposed"
    assert fields["index_lines_before"] > 200 and fields["index_lines_after"] <= 200
    assert fields["index_bytes_before"] > 25_000 and fields["index_bytes_after"] <= 25_000
    assert fields["stale"] == 213  # every memory is older than 30 days
    assert fields["kinds"] == ["distillation", "consolidation"]


def test_auto_apply_applies_a_safe_proposal(alice, untidy):
    from memapp.stores.flags import set_flag

    set_flag("lifecycle_apply", "auto", user=alice)
    consolidate_now(untidy, alice)
    proposal = only_proposal()
    assert proposal.status == "applied" and proposal.decision["decision"] == "auto"
    assert index_problems(Path(untidy.path))["over_lines"] is False
    assert set(proposal.changes.values_list("status", flat=True)) == {ProposalChange.Status.APPLIED}


def test_a_team_store_sends_the_model_only_the_reviewers_own_sessions(alice, bob, model):
    """Every member's sessions count for the gates, but only what the reviewer said reaches the
    model and the proposal: bob's words are never put in front of alice."""
    from memapp.lifecycle.models import Session, TranscriptEntry

    resolve_store(alice, PROJECT, "private")  # the project, as alice's first sync makes it
    team = resolve_store(alice, PROJECT, "team")
    team.project.members.add(alice, bob)
    make_untidy(Path(team.path))
    for owner, said in ((alice, "alice says the staging box moved"), (bob, "bob's private aside")):
        session = Session.objects.create(
            owner=owner, project=team.project, store=team, session_id=f"s-{owner.username}"
        )
        TranscriptEntry.objects.create(
            session=session, seq=1, key="k1", type="user", prose=said, text=said,
            is_user_prose=True, gate_checked=True,
        )  # fmt: skip
    model.propose([])

    run = consolidate_now(team, alice)

    text = model.requests[0].body["messages"][0]["content"]
    assert "alice says the staging box moved" in text
    assert "bob's private aside" not in text
    assert run.sessions == 2  # both count for the gates


SECRET_LOG = (
    "- 09:06 [reference] The replica takes DB_PASSWORD=Sup3rSecretPa55x and "
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"
)


@pytest.mark.parametrize("with_model", [True, False])
def test_a_secret_bearing_log_line_never_becomes_a_change_or_reaches_the_model(
    alice, request, with_model
):
    """A line a current agent would refuse, written by an older one or by hand: distillation
    (the model's or offline) leaves it out and proposes the rest (docs/design.md §10a)."""
    from memapp.memdir.daily_logs import append_to_log
    from tests.lifecycle.untidy import plant_distillation_and_consolidation

    store = resolve_store(alice, PROJECT, "private")
    plant_distillation_and_consolidation(Path(store.path))
    append_to_log(Path(store.path), "logs/2026/03/2026-03-05.md", [SECRET_LOG])
    if with_model:
        model = request.getfixturevalue("model")
        model.propose([])
    run = consolidate_now(store, alice)

    if with_model:
        sent = " ".join(str(r.body) for r in model.requests)
        assert "Staging moves to staging-2" in sent
        assert "Sup3rSecretPa55x" not in sent and "AKIAIOSFODNN7EXAMPLE" not in sent
    changes = " ".join(
        f"{c.key} {c.body} {c.name} {c.description}"
        for c in ProposalChange.objects.filter(proposal__store=store)
    )
    assert "Sup3rSecretPa55x" not in changes and "AKIAIOSFODNN7EXAMPLE" not in changes
    if not with_model:
        assert "staging-2.example.com" in changes
        assert run.findings["distillation"]["skipped"] == [
            [
                "logs/2026/03/2026-03-05.md:2",
                "holds what looks like a secret (Secret assigned to a secret-named key)",
            ]
        ]
