"""An agent's own memory served to that agent (docs/design.md §13): its index in the prompt with
the 200-line / 25,000-byte caps, recall over its own files only, and nobody else's."""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.stores.mirror import rescan_store
from memapp.stores.models import Store
from memapp.stores.projects import resolve_store
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

AGENT_DIR = "/home/alice/.claude/agent-memory/reviewer"


def agent_store(user, tmp_path: Path, scope: str = "user", project=None, agent="reviewer"):
    path = tmp_path / f"{user.username}-{agent}-{scope}"
    write_memory(path, "style.md", "Style", "Style guide lives in docs/style.md", "reference")
    write_memory(path, "review_tests.md", "Tests", "Ask for tests on every bug fix", "feedback")
    lines = [f"- [Entry {i}](entry_{i}.md) — line {i}" for i in range(250)]
    (path / "MEMORY.md").write_text("\n".join(lines) + "\n")
    store = Store.objects.create(
        kind=Store.Kind.AGENT,
        origin=Store.Origin.DISCOVERED,
        path=str(path),
        owner=user,
        project=project,
        agent_type=agent,
        agent_scope=scope,
    )
    rescan_store(store)
    return store


@pytest.fixture
def project_memory(alice):
    private = resolve_store(alice, "acme/app", "private")
    write_memory(
        Path(private.path), "feedback_tests.md", "Real DB", "Tests hit a real DB", "feedback"
    )
    rescan_store(private)
    return private


def post(client, path: str, **body):
    return client.post(path, {"project": "acme/app", **body}, format="json")


def test_the_prompt_shows_the_agents_own_index_within_the_caps(
    alice_api, alice, project_memory, tmp_path
):
    agent_store(alice, tmp_path)

    body = post(alice_api, "/api/v1/prompt", agent_type="reviewer", memory_dir=AGENT_DIR).json()

    assert body["mode"] == "individual"
    # The agent's own prompt, not the main agent's: its heading and what user scope means.
    assert body["sections"][0] == "# Persistent Agent Memory"
    assert body["sections"][-1] == "## Scope of this memory"
    assert "goes with you into every project" in body["text"]
    assert "# auto memory" not in body["text"]
    assert f"Contents of {AGENT_DIR}/MEMORY.md" in body["text"]
    assert "- [Entry 199](entry_199.md)" in body["text"]
    assert "entry_200.md" not in body["text"]
    assert "MEMORY.md is 250 lines (limit: 200)" in body["text"]
    [index] = body["indexes"]
    assert (index["line_count"], index["was_line_truncated"]) == (250, True)
    assert "feedback_tests.md" not in body["text"]


def test_recall_for_an_agent_searches_its_own_files_only(
    alice_api, alice, project_memory, tmp_path
):
    agent_store(alice, tmp_path)

    body = post(
        alice_api,
        "/api/v1/recall",
        query="should a bug fix come with tests? real database?",
        agent_type="reviewer",
        memory_dir=AGENT_DIR,
    ).json()

    assert [(m["path"], m["scope"]) for m in body["memories"]] == [
        (f"{AGENT_DIR}/review_tests.md", "agent")
    ]


def test_each_scope_is_its_own_store(alice_api, alice, project_memory, tmp_path):
    agent_store(alice, tmp_path, "project", project=project_memory.project)

    project_scope = post(alice_api, "/api/v1/prompt", agent_type="reviewer", agent_scope="project")
    user_scope = post(alice_api, "/api/v1/prompt", agent_type="reviewer", agent_scope="user")

    assert project_scope.status_code == 200
    assert "reaches your team through version control" in project_scope.json()["text"]
    assert user_scope.status_code == 404
    assert user_scope.json()["error"]["code"] == "no_store"


def test_an_agent_memhub_has_no_memory_of_recalls_from_the_project(alice_api, project_memory):
    prompt = post(alice_api, "/api/v1/prompt", agent_type="reviewer")
    recalled = post(
        alice_api, "/api/v1/recall", query="real database in tests", agent_type="reviewer"
    ).json()

    assert prompt.status_code == 404
    assert [m["path"] for m in recalled["memories"]] == ["feedback_tests.md"]


def test_nobody_else_is_served_an_agents_memory(bob_api, alice, bob, tmp_path):
    agent_store(alice, tmp_path)
    # staff create the project; bob joins it
    resolve_store(alice, "acme/app", "private").project.members.add(bob)
    resolve_store(bob, "acme/app", "private")

    prompt = post(bob_api, "/api/v1/prompt", agent_type="reviewer")
    recalled = post(
        bob_api, "/api/v1/recall", query="tests on every bug fix", agent_type="reviewer"
    ).json()

    assert prompt.status_code == 404
    assert recalled["memories"] == []
