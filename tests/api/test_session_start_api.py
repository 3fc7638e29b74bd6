"""`POST /api/v1/session-start`: one answer with the private store's files that differ from the
agent's, the team index (as the flags allow), and what waits for review; nothing created."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memapp.lifecycle.models import Proposal
from memapp.stores.flags import set_flag
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project
from memapp.stores.projects import resolve_store
from memapp.stores.session_start import MAX_PULL_BYTES
from tests.conftest import kept_after_leaving, write_memory

pytestmark = pytest.mark.django_db

AGENT_DIR = "/home/alice/.claude/projects/-home-alice-app/memory"


def checksum(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def start(client, **body) -> dict:
    response = client.post("/api/v1/session-start", {"project": "acme/app", **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def private(alice):
    store = resolve_store(alice, "acme/app", "private")
    write_memory(Path(store.path), "a.md", "A", "First memory", "user")
    write_memory(Path(store.path), "notes/b.md", "B", "Second memory", "user")
    (Path(store.path) / "MEMORY.md").write_text("- [A](a.md) — first\n")
    rescan_store(store)
    return store


@pytest.fixture
def team(alice, private):
    store = resolve_store(alice, "acme/app", "team")
    (Path(store.path) / "MEMORY.md").write_text("- [Deploys](deploys.md) — via ArgoCD\n")
    return store


def test_a_project_memhub_does_not_know_is_answered_without_creating_it(alice_api):
    body = start(alice_api, project="acme/unknown")

    assert body == {
        "store": None,
        "checksums": {},
        "files": {},
        "mtimes": {},
        "partial": False,
        "team_index": "",
        "waiting": [],
        "notice": "",
        "session_summary": "",
    }
    assert not Project.objects.filter(key="acme/unknown").exists()


def test_only_the_files_that_differ_from_the_agents_are_sent(alice_api, private):
    root = Path(private.path)
    a = (root / "a.md").read_text()

    body = start(alice_api, have={"a.md": checksum(a), "notes/b.md": "sha256:old"})

    assert body["store"] == private.pk
    assert set(body["checksums"]) == {"a.md", "notes/b.md", "MEMORY.md"}
    assert body["files"] == {
        "notes/b.md": (root / "notes" / "b.md").read_text(),
        "MEMORY.md": "- [A](a.md) — first\n",
    }
    assert body["partial"] is False


def test_a_big_first_pull_is_sent_in_part(alice_api, alice):
    store = resolve_store(alice, "acme/app", "private")
    for name in ("one", "two", "three"):
        write_memory(Path(store.path), f"{name}.md", name, name, "user", "x" * 200_000 + "\n")
    rescan_store(store)

    body = start(alice_api)

    assert body["partial"] is True
    assert 0 < sum(len(text) for text in body["files"].values()) <= MAX_PULL_BYTES
    assert set(body["files"]) == {"one.md", "three.md"}  # the first that fit, in key order
    assert len(body["checksums"]) == 3


def test_the_team_index_is_named_as_the_agent_names_it(alice_api, team):
    body = start(alice_api, memory_dir=AGENT_DIR)

    assert body["team_index"] == (
        f"Contents of {AGENT_DIR}/team/MEMORY.md (shared team memory index, synced with your "
        'team):\n\n<team-memory-content source="shared">\n- [Deploys](deploys.md) — via '
        "ArgoCD\n</team-memory-content>"
    )


@pytest.mark.parametrize(
    "flag", ["team_memory", "auto_memory", "skip_index", "daily_log_mode", "asked without"]
)
def test_no_team_index_when_the_prompt_would_show_none(alice_api, alice, team, flag):
    if flag == "asked without":
        body = start(alice_api, team_index=False)
    else:
        set_flag(flag, flag in ("skip_index", "daily_log_mode"), project=team.project, user=alice)
        body = start(alice_api)

    assert body["team_index"] == ""


def test_no_team_index_for_someone_outside_the_team(bob_api, bob, team):
    kept_after_leaving(bob, "acme/app")

    assert start(bob_api)["team_index"] == ""


def test_what_waits_is_read_from_the_registry_the_navigation_reads(alice_api, bob_api, alice):
    """A pending proposal (the lifecycle registers them) is named, with the page that settles
    it; a decided one is not; nobody else is told of alice's."""
    store = resolve_store(alice, "acme/app", "private")
    Proposal.objects.create(kind="extraction", store=store, owner=alice)
    Proposal.objects.create(kind="extraction", store=store, owner=alice)
    Proposal.objects.create(kind="extraction", store=store, owner=alice, status="rejected")

    body = start(alice_api)

    assert body["waiting"] == [
        {
            "kind": "proposals",
            "label": "proposals to review",
            "count": 2,
            "url": "http://testserver/proposals/",
        }
    ]
    assert body["notice"] == (
        "memhub: waiting for your review: proposals to review (2) at http://testserver/proposals/"
    )
    assert start(bob_api)["notice"] == ""
