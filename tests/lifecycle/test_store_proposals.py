"""Approving a store-wide proposal (docs/design.md §14.6–§14.7): all or nothing, the store left
as it was when writing fails halfway (lock mtime restored), and the bad input of issue 14 — a
proposal deleting more than a quarter of the store, emptying the index, or rewriting a file
edited after the run started — never applied without the person's explicit tick."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.store_proposals import (
    ApplyFailed,
    ApplyRefused,
    NeedsConfirmation,
    StoreBusy,
    default_selection,
    do_apply_store_proposal,
    do_rebase_store_change,
)
from memapp.memdir.consolidate_lock import LOCK_NAME
from memapp.memdir.index import parse_index_entries
from memapp.stores import actions
from memapp.stores.models import Event
from memapp.stores.projects import resolve_store
from tests.api.conftest import api_client
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT, consolidate_now, distill_and_consolidate
from tests.memdir.test_secret_rules import fake_tokens

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits

INDEX = (
    "- [Alpha](alpha.md) — a\n- [Beta](beta.md) — b\n- [Gamma](gamma.md) — c\n"
    "- [Delta](delta.md) — d\n"
)


@pytest.fixture
def store(alice):
    store = resolve_store(alice, PROJECT, "private")
    root = Path(store.path)
    for name in ("alpha", "beta", "gamma", "delta"):
        write_memory(root, f"{name}.md", name.title(), f"All about {name}", "user", f"{name}\n")
    (root / "MEMORY.md").write_text(INDEX)
    return store


def update(file: str, body: str, **fields) -> dict:
    return {
        "action": "update",
        "scope": "private",
        "file": file,
        "name": file.removesuffix(".md").title(),
        "description": f"All about {file.removesuffix('.md')}, corrected",
        "type": "user",
        "body": body,
        "reason": "corrected",
        **fields,
    }


def delete(file: str) -> dict:
    return {"action": "delete", "scope": "private", "file": file, "reason": "merged"}


def propose(model, store, user, changes) -> Proposal:
    model.propose(changes)
    consolidate_now(store, user)
    return Proposal.objects.get(kind="consolidation")


def disk(store) -> dict[str, bytes]:
    root = Path(store.path)
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != LOCK_NAME
    }


def test_a_failure_halfway_puts_every_file_back_and_restores_the_lock(
    alice, store, model, monkeypatch
):
    proposal = propose(
        model,
        store,
        alice,
        [
            update("alpha.md", "alpha, corrected\n"),
            update("beta.md", "beta, corrected\n"),
            {
                "action": "create",
                "scope": "private",
                "file": "notes/deploys.md",
                "name": "Deploys",
                "description": "How deploys go",
                "type": "project",
                "body": "Through the pipeline.\n\n**Why:** x\n**How to apply:** y\n",
                "reason": "new",
            },
        ],
    )
    root = Path(store.path)
    write_atomic = actions.write_atomic

    def and_then_a_file_appears(path, text):
        # Another process puts a file where the new memory's folder must go, after the checks
        # (which refuse a key under a file) and the first writes.
        write_atomic(path, text)
        if path.name == "beta.md":
            (root / "notes").write_text("a file where the new memory's folder must go")

    monkeypatch.setattr(actions, "write_atomic", and_then_a_file_appears)
    lock = root / LOCK_NAME
    os.utime(lock, (1_700_000_000, 1_700_000_000))
    before = disk(store)
    written_at = (root / "alpha.md").stat().st_mtime_ns

    with pytest.raises(ApplyFailed, match="put back"):
        do_apply_store_proposal(proposal, alice)

    # As it was, with the other process's file left alone.
    assert disk(store) == {**before, "notes": b"a file where the new memory's folder must go"}
    assert (root / "alpha.md").stat().st_mtime_ns != written_at  # written, then put back
    assert lock.stat().st_mtime == 1_700_000_000
    assert store.files.get(path="alpha.md").description == "All about alpha"
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert set(proposal.changes.values_list("status", flat=True)) == {"pending"}


def test_deleting_more_than_a_quarter_needs_an_explicit_tick(alice, store, model):
    proposal = propose(model, store, alice, [delete("beta.md"), delete("gamma.md")])
    before = disk(store)
    with pytest.raises(NeedsConfirmation) as caught:
        do_apply_store_proposal(proposal, alice)
    assert [r.code for r in caught.value.risks] == ["deletes_quarter"]
    assert "deletes 2 of the store's 4 memories (50 %)" in str(caught.value)
    assert disk(store) == before

    response = api_client(alice).post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "needs_confirmation"
    assert disk(store) == before

    response = api_client(alice).post(
        f"/api/v1/proposals/{proposal.pk}/approve", {"confirm": True}, format="json"
    )
    assert response.status_code == 200, response.content
    assert not (Path(store.path) / "beta.md").exists()
    assert "beta.md" not in (Path(store.path) / "MEMORY.md").read_text()


def test_an_index_left_without_entries_is_never_ticked_for_you(alice, store, model):
    proposal = propose(
        model,
        store,
        alice,
        [{"action": "update", "scope": "private", "file": "MEMORY.md", "body": "# Memory\n"}],
    )
    index = proposal.changes.get(key="MEMORY.md")
    assert {c["code"] for c in index.checks} == {"empty_index"}
    assert default_selection(proposal.changes.all()) == []
    with pytest.raises(ApplyRefused, match="tick the changes"):
        do_apply_store_proposal(proposal, alice)
    with pytest.raises(NeedsConfirmation, match="no entries"):
        do_apply_store_proposal(proposal, alice, [index.pk])
    do_apply_store_proposal(proposal, alice, [index.pk], confirm=True)
    assert (Path(store.path) / "MEMORY.md").read_text() == "# Memory\n"


def test_a_file_edited_after_the_run_started_is_applied_only_when_ticked(alice, store, model):
    alpha = Path(store.path) / "alpha.md"

    def edit_while_the_model_thinks():
        while not model.requests:
            time.sleep(0.01)
        alpha.write_text(alpha.read_text() + "Alice's own edit.\n")

    editor = threading.Thread(target=edit_while_the_model_thinks)
    editor.start()
    model.propose([update("alpha.md", "alpha, corrected\n"), update("beta.md", "beta!\n")], 1.5)
    consolidate_now(store, alice)
    editor.join()
    proposal = Proposal.objects.get(kind="consolidation")
    changes = {c.key: c for c in proposal.changes.all()}
    assert [c["code"] for c in changes["alpha.md"].checks][-1] == "edited"
    assert changes["beta.md"].pk in default_selection(changes.values())
    assert changes["alpha.md"].pk not in default_selection(changes.values())

    do_apply_store_proposal(proposal, alice)  # what is ticked for you: beta and the index
    assert "Alice's own edit." in alpha.read_text()
    assert (Path(store.path) / "beta.md").read_text().endswith("beta!\n")
    changes["alpha.md"].refresh_from_db()
    assert changes["alpha.md"].status == "skipped"


def test_ticking_the_edited_file_applies_it(alice, store, model):
    alpha = Path(store.path) / "alpha.md"
    model.propose([update("alpha.md", "alpha, corrected\n")])
    consolidate_now(store, alice)
    proposal = Proposal.objects.get(kind="consolidation")
    change = proposal.changes.get(key="alpha.md")
    # Marked as the run would mark a file edited meanwhile: only a tick applies it.
    change.checks = [*change.checks, {"code": "edited", "level": "bad", "message": "edited"}]
    change.save()
    do_apply_store_proposal(proposal, alice, [c.pk for c in proposal.changes.all()])
    assert alpha.read_text().endswith("alpha, corrected\n")


def test_a_file_changed_after_the_proposal_holds_everything_back(alice, store, model):
    proposal = propose(
        model, store, alice, [update("alpha.md", "alpha, corrected\n"), delete("beta.md")]
    )
    beta = Path(store.path) / "beta.md"
    beta.write_text(beta.read_text() + "Bob added this.\n")
    before = disk(store)
    result = do_apply_store_proposal(proposal, alice)
    assert result.conflicts == ["beta.md"] and result.applied == []
    assert disk(store) == before  # alpha's update waits too: nothing is written
    change = proposal.changes.get(key="beta.md")
    assert change.status == "conflict" and "Bob added this." in change.current_text

    do_rebase_store_change(change)
    result = do_apply_store_proposal(proposal, alice)
    assert sorted(result.applied) == ["MEMORY.md", "alpha.md", "beta.md"]
    assert not beta.exists()


def test_an_edit_landing_after_the_check_is_not_overwritten(alice, store, model, monkeypatch):
    """An agent writes alpha.md after the conflict check and before the write: refused, kept."""
    from memapp.lifecycle import store_proposals

    proposal = propose(model, store, alice, [update("alpha.md", "alpha, corrected\n")])
    alpha = Path(store.path) / "alpha.md"
    real_outcome = store_proposals._outcome

    def outcome_then_an_agent_writes(*args):
        outcome = real_outcome(*args)
        alpha.write_text(alpha.read_text() + "The agent added this.\n")
        return outcome

    monkeypatch.setattr(store_proposals, "_outcome", outcome_then_an_agent_writes)
    with pytest.raises(ApplyRefused, match="alpha.md"):
        do_apply_store_proposal(proposal, alice)
    assert "The agent added this." in alpha.read_text()
    assert proposal.changes.get(key="alpha.md").status == "pending"


def test_a_local_agent_consolidating_now_makes_approving_wait(alice, store, model):
    proposal = propose(model, store, alice, [update("alpha.md", "alpha, corrected\n")])
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (Path(store.path) / LOCK_NAME).write_text(str(agent.pid))
        before = disk(store)
        with pytest.raises(StoreBusy, match=f"PID {agent.pid}"):
            do_apply_store_proposal(proposal, alice)
        assert disk(store) == before
    finally:
        agent.kill()
        agent.wait()
    do_apply_store_proposal(proposal, alice)
    assert (Path(store.path) / "alpha.md").read_text().endswith("alpha, corrected\n")


def test_edits_before_approving_and_an_unticked_create_keep_the_index_consistent(
    alice, store, model
):
    proposal = propose(
        model,
        store,
        alice,
        [
            update("alpha.md", "alpha, corrected\n"),
            {
                "action": "create",
                "scope": "private",
                "file": "epsilon.md",
                "name": "Epsilon",
                "description": "All about epsilon",
                "type": "user",
                "body": "epsilon\n",
                "reason": "new",
            },
        ],
    )
    changes = {c.key: c for c in proposal.changes.all()}
    assert "- [Epsilon](epsilon.md) — All about epsilon" in changes["MEMORY.md"].body
    edited_index = changes["MEMORY.md"].body + "- [Docs](https://example.com) — elsewhere\n"
    do_apply_store_proposal(
        proposal,
        alice,
        [changes["alpha.md"].pk, changes["MEMORY.md"].pk],
        {
            changes["alpha.md"].pk: {"body": "alpha, as Alice put it\r\n"},
            changes["MEMORY.md"].pk: {"body": edited_index},
        },
    )
    root = Path(store.path)
    assert (root / "alpha.md").read_text().endswith("alpha, as Alice put it\n")
    index = (root / "MEMORY.md").read_text()
    assert "epsilon.md" not in index and not (root / "epsilon.md").exists()
    assert "https://example.com" in index
    assert ProposalChange.objects.get(pk=changes["epsilon.md"].pk).status == "skipped"


def test_a_secret_typed_into_an_edit_is_refused_and_nothing_is_written(alice, store, model):
    proposal = propose(model, store, alice, [update("alpha.md", "alpha, corrected\n")])
    change = proposal.changes.get(key="alpha.md")
    before = disk(store)
    token = fake_tokens()["github-pat"]
    with pytest.raises(ApplyRefused, match="secret"):
        do_apply_store_proposal(proposal, alice, None, {change.pk: {"body": f"token {token}\n"}})
    assert disk(store) == before
    assert token not in str(Event.objects.values_list("fields", flat=True))


def test_approving_records_the_decision(alice, store, model):
    proposal = propose(model, store, alice, [update("alpha.md", "alpha, corrected\n")])
    do_apply_store_proposal(proposal, alice)
    event = Event.objects.get(kind="proposal_decided")
    assert event.fields["proposal_kind"] == "consolidation"
    assert (event.fields["decision"], event.fields["applied"]) == ("approved", 2)
    written = Event.objects.filter(kind="memory_written").values_list("fields", flat=True)
    assert {f["path"] for f in written} == {"alpha.md", "MEMORY.md"}
    assert {f["via"] for f in written} == {"proposal"}


def test_a_memory_no_index_line_can_name_is_updated_and_stays_out_of_the_index(alice, store, model):
    root = Path(store.path)
    write_memory(root, "notes_#1.md", "Notes", "Notes about one", "user", "one\n")
    proposal = propose(model, store, alice, [update("notes_#1.md", "one, corrected\n")])
    assert do_apply_store_proposal(proposal, alice).applied
    assert (root / "notes_#1.md").read_text().endswith("one, corrected\n")
    assert "#1" not in (root / "MEMORY.md").read_text()  # a link there would be a fragment


@pytest.mark.parametrize("first", ["distillation", "consolidation"])
def test_both_proposals_of_one_run_apply_and_the_index_keeps_what_each_added(alice, first):
    """Distillation and consolidation each propose the whole index from what the run read;
    the one approved second merges what the first changed since, in either order."""
    store, proposals, created = distill_and_consolidate(alice)
    root = Path(store.path)
    second = "consolidation" if first == "distillation" else "distillation"

    assert do_apply_store_proposal(proposals[first], alice).conflicts == []
    result = do_apply_store_proposal(proposals[second], alice)

    assert result.conflicts == [] and "MEMORY.md" in result.applied
    for proposal in proposals.values():
        proposal.refresh_from_db()
        assert proposal.status == "applied"
    linked = [entry.path for entry in parse_index_entries((root / "MEMORY.md").read_text())]
    assert sorted(linked) == sorted(["project_freeze.md", created])
    assert "next Tuesday" not in (root / "project_freeze.md").read_text()


def test_the_api_shows_the_pending_index_as_approving_would_write_it(alice):
    store, proposals, created = distill_and_consolidate(alice)
    api = api_client(alice)
    url = "/api/v1/proposals?status=pending"
    index = next(c for p in api.get(url).json()["proposals"] if p["kind"] == "consolidation"
                 for c in p["changes"] if c["file"] == "MEMORY.md")  # fmt: skip
    assert created not in index["body"]
    do_apply_store_proposal(proposals["distillation"], alice)

    index = next(c for p in api.get(url).json()["proposals"] for c in p["changes"]
                 if c["file"] == "MEMORY.md")  # fmt: skip
    assert f"]({created})" in index["body"] and "gone.md" not in index["body"]
    do_apply_store_proposal(proposals["consolidation"], alice)
    assert (Path(store.path) / "MEMORY.md").read_text() == index["body"]


def test_a_merge_that_puts_the_index_over_its_caps_needs_the_tick(alice):
    from memapp.stores.flags import set_flag

    store, proposals, created = distill_and_consolidate(alice)
    do_apply_store_proposal(proposals["distillation"], alice)
    set_flag("index_max_lines", 1, user=alice)  # the merged index has 2 entries
    before = disk(store)

    with pytest.raises(NeedsConfirmation, match=r"over its caps \(2 lines \(limit: 1\)\)"):
        do_apply_store_proposal(proposals["consolidation"], alice)

    assert disk(store) == before
    do_apply_store_proposal(proposals["consolidation"], alice, confirm=True)
    assert created in (Path(store.path) / "MEMORY.md").read_text()


def test_a_new_memory_under_a_file_is_refused_before_anything_is_written(alice, store, model):
    proposal = propose(
        model,
        store,
        alice,
        [
            update("alpha.md", "alpha, corrected\n"),
            {
                "action": "create",
                "scope": "private",
                "file": "notes/deploys.md",
                "name": "Deploys",
                "description": "How deploys go",
                "type": "project",
                "body": "Through the pipeline.\n\n**Why:** x\n**How to apply:** y\n",
                "reason": "new",
            },
        ],
    )
    root = Path(store.path)
    (root / "notes").write_text("a file where the new memory's folder must go")
    before = disk(store)
    with pytest.raises(ApplyRefused, match=r"\[parent-is-file\]"):
        do_apply_store_proposal(proposal, alice)
    assert disk(store) == before
