"""`POST /api/v1/recall` with offline recall (docs/design.md §7–§8): what an agent is shown."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from memapp.stores.events import flush_events
from memapp.stores.flags import set_flag
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event
from memapp.stores.projects import resolve_store
from tests.api.conftest import api_client
from tests.conftest import kept_after_leaving, write_memory

pytestmark = pytest.mark.django_db

AGENT_DIR = "/home/alice/.claude/projects/-home-alice-app/memory"
DAY = 86_400
SESSION_BUDGET = 60 * 1024


@pytest.fixture(autouse=True)
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture(autouse=True)
def fresh_budgets():
    """Session budgets live in the cache, which outlives a test's database rows."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def private(alice):
    return resolve_store(alice, "acme/app", "private")


@pytest.fixture
def team(alice, private):
    return resolve_store(alice, "acme/app", "team")


def put(store, filename, name, description, type_, body="Body.\n", age_s: float = 60):
    """A memory in `store`, last modified `age_s` seconds ago."""
    path = write_memory(Path(store.path), filename, name, description, type_, body)
    mtime = time.time() - age_s
    os.utime(path, (mtime, mtime))
    return path


def recall(client, status=200, **body):
    response = client.post("/api/v1/recall", {"project": "acme/app", **body}, format="json")
    assert response.status_code == status, response.content
    return response.json()


def paths(body) -> list[str]:
    return [m["path"] for m in body["memories"]]


def expected_rendered(memories) -> str:
    blocks = [m["header"] + "\n\n" + m["content"].rstrip("\r\n") for m in memories]
    return "<system-reminder>\n" + "\n\n".join(blocks) + "\n</system-reminder>"


@pytest.fixture
def notes(private):
    """A small realistic private store."""
    put(
        private,
        "feedback_testing.md",
        "Integration tests use a real database",
        "Integration tests must hit a real database, not mocks",
        "feedback",
        "Integration tests must hit a real database.\n\n**Why:** mocks hid a broken migration.\n",
    )
    put(
        private,
        "project_freeze.md",
        "Merge freeze",
        "Merge freeze on main from 2026-03-05 for the mobile release",
        "project",
    )
    put(private, "user_role.md", "Role", "Alice is a backend engineer, new to React", "user")
    put(
        private,
        "reference_dashboards.md",
        "Latency dashboard",
        "The on-call latency dashboard is grafana.internal/d/api-latency",
        "reference",
    )
    return private


def stat_of(store, filename) -> tuple[int, int]:
    st = Path(store.path, filename).stat()
    return st.st_atime_ns, st.st_mtime_ns


def test_a_matching_query_recalls_the_memory_with_its_header(alice_api, notes):
    path = Path(notes.path, "feedback_testing.md")
    old_atime = path.stat().st_mtime_ns - 3_600_000_000_000  # a read would refresh it (relatime)
    os.utime(path, ns=(old_atime, path.stat().st_mtime_ns))
    before = stat_of(notes, "feedback_testing.md")
    body = recall(alice_api, query="should the integration tests use mocks for the database?")
    assert stat_of(notes, "feedback_testing.md") == before  # read without touching its atime
    assert body["selector"] == "offline" and body["fallback_reason"] is None
    [memory] = body["memories"]
    assert memory["path"] == "feedback_testing.md"
    assert memory["scope"] == "private"
    assert (memory["type"], memory["name"]) == ("feedback", "Integration tests use a real database")
    assert memory["description"] == "Integration tests must hit a real database, not mocks"
    assert (memory["age"], memory["age_days"]) == ("today", 0)
    assert memory["header"] == "Memory (saved today): feedback_testing.md:"
    assert memory["content"] == Path(notes.path, "feedback_testing.md").read_text()
    assert memory["truncated"] is False
    assert memory["reason"].startswith("matches: ")
    assert body["rendered"] == (
        "<system-reminder>\nMemory (saved today): feedback_testing.md:\n\n"
        + memory["content"].rstrip("\n")
        + "\n</system-reminder>"
    )


def test_headers_name_the_agents_own_paths(alice_api, notes):
    body = recall(alice_api, query="integration tests real database", memory_dir=AGENT_DIR)
    [memory] = body["memories"]
    assert memory["path"] == f"{AGENT_DIR}/feedback_testing.md"
    assert memory["header"] == f"Memory (saved today): {AGENT_DIR}/feedback_testing.md:"
    assert str(notes.path) not in json.dumps(body)


def test_an_unrelated_query_recalls_nothing(alice_api, notes):
    body = recall(alice_api, query="write a haiku about autumn leaves")
    assert body["memories"] == [] and body["rendered"] == ""
    assert body["selector"] == "offline"


def test_old_memories_carry_their_age_and_a_staleness_note(alice_api, private):
    topic = ("Invoice rounding", "Invoice totals round half-even to the cent", "project")
    put(private, "project_new.md", *topic, age_s=60)
    put(private, "project_yesterday.md", *topic, age_s=DAY + 3600)
    put(private, "project_old.md", *topic, age_s=10 * DAY + 3600)
    body = recall(alice_api, query="how do invoice totals round?")
    by_path = {m["path"]: m for m in body["memories"]}
    assert set(by_path) == {"project_new.md", "project_yesterday.md", "project_old.md"}

    assert by_path["project_new.md"]["header"] == "Memory (saved today): project_new.md:"
    yesterday = by_path["project_yesterday.md"]
    assert (yesterday["age"], yesterday["age_days"]) == ("yesterday", 1)
    assert yesterday["header"] == "Memory (saved yesterday): project_yesterday.md:"
    old = by_path["project_old.md"]
    assert (old["age"], old["age_days"]) == ("10 days ago", 10)
    note, blank, last = old["header"].partition("\n\n")
    assert blank and last == "Memory: project_old.md:"
    assert note.startswith("This memory is 10 days old.")
    assert "point-in-time" in note and "verify" in note.lower()
    assert "\n" not in note

    assert body["rendered"] == expected_rendered(body["memories"])
    assert f"{old['header']}\n\n---\nname: Invoice rounding" in body["rendered"]


def deploy_notes(store, count: int, body: str = "Run the smoke tests first.\n") -> list[str]:
    """`count` equally relevant memories, newest first in the returned order."""
    names = []
    for i in range(count):
        name = f"project_deploy_{chr(ord('a') + i)}.md"
        put(
            store,
            name,
            "Deploy checklist",
            "Deploy checklist for the payments service",
            "project",
            body,
            age_s=600 + 60 * i,
        )
        names.append(name)
    return names


def test_at_most_five_memories_newest_first(alice_api, private):
    names = deploy_notes(private, 8)
    body = recall(alice_api, query="deploy checklist for payments")
    assert paths(body) == names[:5]
    assert body["rendered"] == expected_rendered(body["memories"])


def test_the_recall_max_flag_gives_fewer(alice_api, private, alice):
    names = deploy_notes(private, 8)
    set_flag("recall_max", 2, user=alice)
    assert paths(recall(alice_api, query="deploy checklist for payments")) == names[:2]


def test_the_recall_flag_off_recalls_nothing(alice_api, private, alice):
    deploy_notes(private, 3)
    set_flag("recall", False, project=private.project, user=alice)
    body = recall(alice_api, query="deploy checklist for payments")
    assert body["memories"] == [] and body["rendered"] == ""
    assert body["selector"] == "disabled"


def test_already_surfaced_memories_are_removed_and_their_slots_refilled(alice_api, private):
    names = deploy_notes(private, 8)
    body = recall(alice_api, query="deploy checklist for payments", already_surfaced=names[:2])
    assert paths(body) == names[2:7]
    again = recall(
        alice_api, query="deploy checklist for payments", already_surfaced=names[:2] + names[2:7]
    )
    assert paths(again) == names[7:]


def test_already_surfaced_uses_the_agents_paths(alice_api, private):
    names = deploy_notes(private, 6)
    body = recall(
        alice_api,
        query="deploy checklist for payments",
        memory_dir=AGENT_DIR,
        already_surfaced=[f"{AGENT_DIR}/{names[0]}"],
    )
    assert paths(body) == [f"{AGENT_DIR}/{name}" for name in names[1:6]]


@pytest.fixture
def both_scopes(private, team):
    put(
        private, "feedback_deploy.md", "Deploy on Tuesdays", "I deploy on Tuesdays only", "feedback"
    )
    put(
        team,
        "project_deploy.md",
        "Deploys go through ArgoCD",
        "Deploys to production go through ArgoCD",
        "project",
        age_s=120,
    )
    return private, team


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("private", ["feedback_deploy.md"]),
        ("team", ["team/project_deploy.md"]),
        ("both", ["feedback_deploy.md", "team/project_deploy.md"]),
    ],
)
def test_scope_chooses_the_stores(alice_api, both_scopes, scope, expected):
    body = recall(alice_api, query="how do we deploy to production?", scope=scope)
    assert sorted(paths(body)) == expected
    scopes = {m["path"]: m["scope"] for m in body["memories"]}
    assert all(scopes[p] == ("team" if p.startswith("team/") else "private") for p in expected)


def test_team_memories_are_named_under_the_agents_team_dir(alice_api, both_scopes):
    body = recall(alice_api, query="deploy production argocd", scope="team", memory_dir=AGENT_DIR)
    [memory] = body["memories"]
    assert memory["path"] == f"{AGENT_DIR}/team/project_deploy.md"
    assert memory["header"] == f"Memory (saved today): {AGENT_DIR}/team/project_deploy.md:"


def test_team_memory_off_leaves_only_private_memories(alice_api, both_scopes, alice):
    set_flag("team_memory", False, user=alice)
    body = recall(alice_api, query="how do we deploy to production?")
    assert paths(body) == ["feedback_deploy.md"]
    assert (
        recall(alice_api, query="how do we deploy to production?", scope="team")["memories"] == []
    )


def test_another_users_private_memories_never_appear(bob_api, bob, both_scopes):
    bobs = kept_after_leaving(bob, "acme/app")
    put(bobs, "feedback_deploy.md", "Bob deploys", "Bob deploys with the blue-green script", "user")
    body = recall(bob_api, query="how do we deploy to production?")
    assert paths(body) == ["feedback_deploy.md"]
    assert "Tuesdays" not in json.dumps(body) and "ArgoCD" not in json.dumps(body)
    assert "Bob deploys" in body["memories"][0]["content"]


def test_a_teammate_sees_team_memories_but_not_the_owners_private_ones(bob_api, bob, both_scopes):
    private, _ = both_scopes
    private.project.members.add(bob)
    body = recall(bob_api, query="how do we deploy to production?")
    assert paths(body) == ["team/project_deploy.md"]
    assert "Tuesdays" not in json.dumps(body)


def test_a_team_file_kept_back_for_a_secret_is_recalled_for_no_one(bob_api, bob, both_scopes):
    """Team sync keeps it from the shared repository, so no teammate gets it from git: nor
    from recall, which would hand its text to their agent (and its model)."""
    from teamsync.models import BlockedFile

    _, team = both_scopes
    team.project.members.add(bob)
    query = "how do we deploy to production?"
    assert paths(recall(bob_api, query=query, scope="team")) == ["team/project_deploy.md"]
    BlockedFile.objects.create(store=team, key="project_deploy.md", reason="secret", hits=[])
    assert recall(bob_api, query=query, scope="team")["memories"] == []
    BlockedFile.objects.all().delete()  # fixed: it goes to git, and to recall, again
    assert paths(recall(bob_api, query=query, scope="team")) == ["team/project_deploy.md"]


def test_a_team_file_kept_back_is_read_listed_and_found_by_no_agent(bob_api, bob, both_scopes):
    """What recall does not give a teammate's agent, the files API and search do not either:
    an agent that asks for it by name is told why, and the file is back once it is fixed."""
    from teamsync.models import BlockedFile

    _, team = both_scopes
    team.project.members.add(bob)
    rescan_store(team)
    url = f"/api/v1/stores/{team.pk}/files"
    assert bob_api.get(f"{url}/project_deploy.md").status_code == 200
    assert [f["key"] for f in bob_api.get(f"{url}/").json()["files"]] == ["project_deploy.md"]
    BlockedFile.objects.create(store=team, key="project_deploy.md", reason="secret", hits=[])

    response = bob_api.get(f"{url}/project_deploy.md")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "kept_back"
    assert error["message"] == (
        "Team sync keeps project_deploy.md back from the team (a secret, a size or entry cap, or "
        "not text), so memhub gives it to no agent until a person fixes it: the Team sync page "
        "says why."
    )
    assert "ArgoCD" not in response.content.decode()
    assert bob_api.get(f"{url}/").json()["files"] == []
    assert "project_deploy.md" not in bob_api.get(f"{url}/?view=hashes").json()["checksums"]
    found = bob_api.get("/api/v1/search", {"q": "ArgoCD"}).json()
    assert found["memories"] == []

    BlockedFile.objects.all().delete()  # fixed
    assert bob_api.get(f"{url}/project_deploy.md").status_code == 200
    found = bob_api.get("/api/v1/search", {"q": "ArgoCD"}).json()
    assert [hit["path"] for hit in found["memories"]] == ["project_deploy.md"]


def test_an_outsider_with_no_store_gets_nothing(charlie, both_scopes):
    body = recall(api_client(charlie), query="how do we deploy to production?")
    assert body["memories"] == [] and body["rendered"] == ""


def test_usage_docs_of_tools_in_use_are_skipped_but_warnings_kept(alice_api, private):
    put(
        private,
        "reference_grep.md",
        "Grep usage",
        "How to use the Grep tool: regex syntax and flags for searching code",
        "reference",
    )
    put(
        private,
        "feedback_grep.md",
        "Grep gotcha",
        "Grep silently skips files ignored by .gitignore when searching code",
        "feedback",
    )
    body = recall(alice_api, query="searching code with grep", recent_tools=["Grep", "Bash"])
    assert paths(body) == ["feedback_grep.md"]
    without_tools = recall(alice_api, query="searching code with grep")
    assert "reference_grep.md" in paths(without_tools)


def test_each_memory_is_cut_to_4096_bytes_with_a_note(alice_api, private):
    line = "Step: keep the rollback command at hand while the migration runs.\n"
    put(
        private,
        "project_big.md",
        "Big rollout",
        "Rollout plan for the billing migration",
        "project",
        line * 150,
    )
    put(
        private,
        "project_small.md",
        "Small rollout",
        "Rollout plan for the billing migration",
        "project",
        line * 10,
    )
    body = recall(alice_api, query="billing migration rollout plan", memory_dir=AGENT_DIR)
    by_path = {m["path"]: m for m in body["memories"]}
    big = by_path[f"{AGENT_DIR}/project_big.md"]
    assert big["truncated"] is True
    kept, _, note = big["content"].rpartition("\n\n")
    assert len(kept.encode()) <= 4096
    assert Path(private.path, "project_big.md").read_text().startswith(kept)
    assert note.startswith("> This memory is ")
    assert note.endswith(f"Read the full file at {AGENT_DIR}/project_big.md before relying on it.")
    small = by_path[f"{AGENT_DIR}/project_small.md"]
    assert small["truncated"] is False
    assert small["content"] == Path(private.path, "project_small.md").read_text()
    assert body["rendered"] == expected_rendered(body["memories"])


def test_a_memory_over_200_lines_is_cut_by_lines(alice_api, private):
    put(
        private,
        "project_long.md",
        "Long list",
        "Every billing cron job we run",
        "project",
        "".join(f"- job {i}\n" for i in range(300)),
    )
    [memory] = recall(alice_api, query="billing cron jobs")["memories"]
    assert memory["truncated"] is True
    kept, _, note = memory["content"].rpartition("\n\n")
    assert len(kept.split("\n")) == 200
    assert "305 lines (limit: 200)" in note


def test_a_session_gets_at_most_60_kb(alice_api, private):
    names = deploy_notes(private, 20, body="Check the payments dashboard.\n" * 300)
    session = {"query": "deploy checklist for payments", "session_id": "sess-1"}
    surfaced: list[str] = []
    sizes: list[int] = []
    counts = []
    for _ in range(4):
        body = recall(alice_api, already_surfaced=surfaced, **session)
        counts.append(len(body["memories"]))
        surfaced += paths(body)
        sizes += [len(m["content"].encode()) for m in body["memories"]]
        assert all(m["truncated"] for m in body["memories"])
    per_memory = sizes[0]
    assert set(sizes) == {per_memory}
    assert sum(sizes) <= SESSION_BUDGET < sum(sizes) + per_memory
    assert counts[:2] == [5, 5] and counts[2] < 5 and counts[3] == 0
    assert surfaced == names[: len(surfaced)]

    body = recall(alice_api, already_surfaced=surfaced, **session)
    assert body["memories"] == [] and body["rendered"] == ""

    fresh = recall(
        alice_api,
        query=session["query"],
        session_id="sess-2",
        already_surfaced=surfaced,
    )
    assert len(fresh["memories"]) == 5


def test_without_a_session_id_there_is_no_session_budget(alice_api, private):
    deploy_notes(private, 20, body="Check the payments dashboard.\n" * 300)
    surfaced: list[str] = []
    for _ in range(4):
        body = recall(alice_api, query="deploy checklist for payments", already_surfaced=surfaced)
        assert len(body["memories"]) == 5
        surfaced += paths(body)


def test_sessions_of_different_users_do_not_share_a_budget(alice_api, bob_api, bob, private):
    deploy_notes(private, 20, body="Check the payments dashboard.\n" * 300)
    bobs = kept_after_leaving(bob, "acme/app")
    deploy_notes(bobs, 5, body="Check the payments dashboard.\n" * 300)
    surfaced: list[str] = []
    for _ in range(3):
        body = recall(
            alice_api, query="deploy checklist", session_id="shared", already_surfaced=surfaced
        )
        surfaced += paths(body)
    assert len(recall(bob_api, query="deploy checklist", session_id="shared")["memories"]) == 5


def test_a_recall_event_is_recorded_without_content(alice_api, alice, private):
    put(
        private,
        "project_old.md",
        "Invoice rounding",
        "Invoice totals round half-even",
        "project",
        "SECRET-LOOKING-BODY-TEXT\n",
        age_s=3 * DAY + 60,
    )
    deploy_notes(private, 2)
    recall(alice_api, query="how do invoice totals round?")
    assert not Event.objects.filter(kind="recall").exists()  # buffered, not a write per request
    flush_events()
    event = Event.objects.get(kind="recall")
    assert event.user == alice and event.project == private.project
    assert event.fields == {
        "candidates": 3,
        "selected": 1,
        "ages": [3],
        "selector": "offline",
        "error": None,
    }
    assert "SECRET-LOOKING" not in json.dumps(event.fields)
    assert "Invoice" not in json.dumps(event.fields)


def test_recall_needs_a_token():
    response = APIClient().post(
        "/api/v1/recall", {"project": "acme/app", "query": "x"}, format="json"
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": "x", "limit": 10}, "limit"),
        ({"query": "x", "scope": "everyone"}, "scope"),
        ({"query": "x", "recent_tools": "Bash"}, "recent_tools"),
        ({}, "query"),
    ],
)
def test_bad_requests_get_400_naming_the_field(alice_api, payload, field):
    body = recall(alice_api, status=400, **payload)
    assert body["error"]["code"] == "invalid"
    assert field in body["error"]["details"]


def test_an_agent_gets_a_team_index_whole_or_not_at_all(bob_api, bob, both_scopes):
    """The files API gives a team index only while agents may see all of it: not while it
    lists a file team sync keeps back (a client would write it back without that line), nor
    while a line of a file outside the shared repository (which team sync never judges: its
    shared form drops the line) holds a secret."""
    from teamsync.models import BlockedFile

    _, team = both_scopes
    team.project.members.add(bob)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    root = Path(team.path)
    deploy = "- [Deploy](project_deploy.md) — how we deploy\n"
    (root / "MEMORY.md").write_text(deploy + f"- [CI](reference_ci.md) — token {token}\n")
    write_memory(root, "reference_ci.md", "CI", "The CI runner", "reference", f"Token: {token}")
    BlockedFile.objects.create(store=team, key="reference_ci.md", reason="secret", hits=[])
    rescan_store(team)
    url = f"/api/v1/stores/{team.pk}/files"

    for index in (
        deploy + f"- [CI](reference_ci.md) — token {token}\n",
        deploy + f"- [Runner](runner.md) — its token is {token}\n",
    ):
        (root / "MEMORY.md").write_text(index)
        response = bob_api.get(f"{url}/MEMORY.md")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "kept_back"
        assert "no agent whole" in response.json()["error"]["message"]
        assert token not in response.content.decode()
        listed = bob_api.get(f"{url}/")
        assert token not in listed.content.decode()
        assert {f["key"] for f in listed.json()["files"]} == {"project_deploy.md"}

    (root / "MEMORY.md").write_text(deploy)  # fixed: given again
    assert bob_api.get(f"{url}/MEMORY.md").json()["content"] == deploy
