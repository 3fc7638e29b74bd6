"""Gemini CLI's `/memory inbox` patches shown and decided as memhub proposals (docs/design.md
§28): real files in a temp Gemini home, the discovered store, the review page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memapp.lifecycle.gemini_inbox import gemini_inbox_task, propose_inbox_patches
from memapp.lifecycle.models import Proposal
from memapp.lifecycle.proposals import do_apply_proposal, do_reject_proposal
from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Event, MemoryVersion, Store
from tests.admin_ui.conftest import client_for, text

NOTES = (
    "# Project Memory\n- Use uv for installs.\n- CI runs on every push.\n- Deploys are manual.\n"
)


@pytest.fixture
def gemini(memory_base, tmp_path, alice):
    """A Gemini CLI memory dir with notes (no frontmatter) and a patch in its inbox."""
    home = tmp_path / "gemini-home" / ".gemini"
    memory = home / "tmp" / "app" / "memory"
    (memory / ".inbox" / "private").mkdir(parents=True)
    (memory / "MEMORY.md").write_text(NOTES)
    (home / "projects.json").write_text('{"projects": {"/home/alice/app": "app"}}')
    (memory / ".inbox" / "private" / "extraction.patch").write_text(
        f"--- {memory}/MEMORY.md\n+++ {memory}/MEMORY.md\n@@ -2,3 +2,4 @@\n"
        " - Use uv for installs.\n - CI runs on every push.\n - Deploys are manual.\n"
        f"+- See {memory}/release.md for release notes.\n"
        f"--- /dev/null\n+++ {memory}/release.md\n@@ -0,0 +1,2 @@\n+# Release\n+Tag from main.\n"
    )
    discover_local_stores(memory_base, gemini=home)
    return Store.objects.get(path=str(memory)), memory


def test_an_inbox_patch_is_one_proposal_labelled_gemini_cli_and_approving_writes_it(gemini, alice):
    store, memory = gemini
    assert gemini_inbox_task.call() == {"proposed": 1}
    assert propose_inbox_patches(store) == {"known": 1}  # the same patch is not proposed twice
    proposal = Proposal.objects.get(store=store)
    assert (proposal.kind, proposal.owner, proposal.agents) == ("inbox", alice, ["Gemini CLI"])
    assert [(c.action, c.key) for c in proposal.changes.all()] == [
        ("update", "MEMORY.md"),
        ("create", "release.md"),
    ]
    client = client_for(alice)
    listing = text(client.get(reverse("proposals")))
    assert "Gemini CLI" in listing and "release.md" in listing
    assert "release notes" in text(client.get(reverse("proposal", args=[proposal.pk])))

    result = do_apply_proposal(proposal, alice)

    assert result.applied == ["MEMORY.md", "release.md"]
    assert (memory / "release.md").read_text() == "# Release\nTag from main.\n"  # no frontmatter
    assert (memory / "MEMORY.md").read_text().endswith(f"{memory}/release.md for release notes.\n")
    assert not (memory / ".inbox" / "private" / "extraction.patch").exists()  # Gemini's inbox
    assert set(
        MemoryVersion.objects.filter(store=store, via="proposal").values_list("path", flat=True)
    ) >= {"release.md"}


def test_rejecting_writes_nothing_and_keeps_no_second_proposal(gemini, alice):
    store, memory = gemini
    propose_inbox_patches(store)
    do_reject_proposal(Proposal.objects.get(store=store), alice)
    assert (memory / "MEMORY.md").read_text() == NOTES
    assert not (memory / "release.md").exists()
    assert propose_inbox_patches(store) == {"known": 1}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"not a diff\n", "not a unified diff"),
        (b"--- /dev/null\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+x\n", "outside this store"),
        (b"\xff\xfe garbage\n", "not UTF-8"),
        (b"\0\0\0", "binary"),
    ],
)
def test_a_patch_memhub_cannot_take_is_shown_once_with_its_reason_and_left_in_place(
    gemini, alice, content, reason
):
    store, memory = gemini
    patch = memory / ".inbox" / "private" / "extraction.patch"
    patch.write_bytes(content)
    assert propose_inbox_patches(store) == {"refused": 1}
    assert propose_inbox_patches(store) == {"known": 1}
    proposal = Proposal.objects.get(store=store)
    assert proposal.status == "failed" and reason in proposal.dropped[0]["reason"]
    assert reason in text(client_for(alice).get(reverse("proposal", args=[proposal.pk])))
    assert patch.read_bytes() == content  # nothing lost
    assert Event.objects.filter(kind="gemini_inbox_patch", fields__outcome="refused").count() == 1


def test_a_patch_that_no_longer_fits_the_file_is_refused(gemini):
    store, memory = gemini
    (memory / "MEMORY.md").write_text(NOTES.replace("manual", "automatic"))
    assert propose_inbox_patches(store) == {"refused": 1}
    assert "does not apply" in Proposal.objects.get(store=store).dropped[0]["reason"]
