"""`GET|POST /api/v1/prompt`: the memory section of an agent's system prompt (docs/design.md §9)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from memapp.stores.events import flush_events
from memapp.stores.flags import set_flag
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event, Project
from memapp.stores.projects import resolve_store
from tests.conftest import kept_after_leaving

pytestmark = pytest.mark.django_db

AGENT_DIR = "/home/alice/.claude/projects/-home-alice-app/memory"
PRIVATE_INDEX = "- [Real DB](feedback_testing.md) — integration tests hit a real database\n"
TEAM_INDEX = "- [Release](project_release.md) — freeze on 2026-03-05\n"
COMMON_TAIL = [
    "## When to access memories",
    "## Before recommending from memory",
    "## Memory and other forms of persistence",
]
INDIVIDUAL = [
    "# auto memory",
    "## Types of memory",
    "## What NOT to save in memory",
    "## How to save memories",
    *COMMON_TAIL,
]
COMBINED = [
    "# Memory",
    "## Memory scope",
    "## Types of memory",
    "## What NOT to save in memory",
    "## How to save memories",
    *COMMON_TAIL,
]


@pytest.fixture
def private(alice):
    store = resolve_store(alice, "acme/app", "private")
    Path(store.path, "MEMORY.md").write_text(PRIVATE_INDEX)
    return store


@pytest.fixture
def team(alice, private):
    store = resolve_store(alice, "acme/app", "team")
    Path(store.path, "MEMORY.md").write_text(TEAM_INDEX)
    return store


def prompt(client, status=200, method="post", **fields):
    data = {"project": "acme/app", **fields}
    if method == "post":
        response = client.post("/api/v1/prompt", data, format="json")
    else:
        response = client.get("/api/v1/prompt", data)
    assert response.status_code == status, response.content
    return response.json()


def test_individual_mode_shows_the_private_index(alice_api, private):
    body = prompt(alice_api)
    assert body["mode"] == "individual"
    assert body["sections"] == INDIVIDUAL
    index = f"{private.path}/MEMORY.md"
    assert f"Contents of {index} (" in body["text"]
    assert f"):\n\n{PRIVATE_INDEX.strip()}" in body["text"]
    assert body["indexes"] == [
        {
            "path": index,
            "line_count": 1,
            "byte_count": len(PRIVATE_INDEX.strip().encode()),
            "was_line_truncated": False,
            "was_byte_truncated": False,
        }
    ]
    assert body["text"].startswith("# auto memory\n\n")


def test_the_agents_memory_dir_is_named_instead_of_the_servers(alice_api, private):
    body = prompt(alice_api, memory_dir=AGENT_DIR)
    assert f"`{AGENT_DIR}`" in body["text"]
    assert f"Contents of {AGENT_DIR}/MEMORY.md (" in body["text"]
    assert body["indexes"][0]["path"] == f"{AGENT_DIR}/MEMORY.md"
    assert str(private.path) not in body["text"]


def test_get_takes_the_same_fields_as_post(alice_api, private):
    got = prompt(alice_api, method="get", memory_dir=AGENT_DIR)
    posted = prompt(alice_api, memory_dir=AGENT_DIR)
    assert got == posted


def test_a_team_store_gives_combined_mode_with_the_shared_wrapper(alice_api, team):
    body = prompt(alice_api, memory_dir=AGENT_DIR)
    assert body["mode"] == "combined"
    assert body["sections"] == COMBINED
    text = body["text"]
    assert f"`{AGENT_DIR}/team`" in text
    assert f"Contents of {AGENT_DIR}/MEMORY.md (" in text
    assert f"Contents of {AGENT_DIR}/team/MEMORY.md (" in text
    assert (
        f'<team-memory-content source="shared">\n{TEAM_INDEX.strip()}\n</team-memory-content>'
        in text
    )
    # The private index is not wrapped; it comes first.
    assert text.index(PRIVATE_INDEX.strip()) < text.index("<team-memory-content")
    assert text.count("<team-memory-content") == 1
    assert "secret" in text.lower()  # the rule against secrets in team memory
    assert [i["path"] for i in body["indexes"]] == [
        f"{AGENT_DIR}/MEMORY.md",
        f"{AGENT_DIR}/team/MEMORY.md",
    ]


def test_the_team_index_shows_no_line_the_team_does_not_get(alice_api, team):
    """The prompt's team index is the one teammates get (docs/design.md §10): no entry of a
    file team sync keeps back, and no index at all while one of its lines holds a secret (a
    file outside the shared repository, whose line its shared form drops)."""
    from teamsync.models import BlockedFile

    index = Path(team.path, "MEMORY.md")
    kept = "- [CI](reference_ci.md) — the runner's setup\n"
    index.write_text(TEAM_INDEX + kept)
    BlockedFile.objects.create(store=team, key="reference_ci.md", reason="secret", hits=[])
    text = prompt(alice_api)["text"]
    assert f'<team-memory-content source="shared">\n{TEAM_INDEX.strip()}\n</' in text
    assert "runner's setup" not in text

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    index.write_text(TEAM_INDEX + f"- [Runner](runner.md) — its token is {token}\n")
    rescan_store(team)  # as the live mirror does
    for fields in ({}, {"memory_dir": AGENT_DIR}):
        text = prompt(alice_api, **fields)["text"]
        assert token not in text and TEAM_INDEX.strip() not in text
        assert "team/MEMORY.md (" in text and "is currently empty" in text
    started = alice_api.post(
        "/api/v1/session-start", {"project": "acme/app", "team_index": True}, format="json"
    )
    assert started.status_code == 200, started.content
    assert token not in started.content.decode()


def test_team_memory_off_gives_individual_mode(alice_api, team, alice):
    set_flag("team_memory", False, user=alice)
    body = prompt(alice_api)
    assert body["mode"] == "individual"
    assert "<team-memory-content" not in body["text"] and TEAM_INDEX.strip() not in body["text"]


def test_a_user_outside_the_project_never_sees_its_team_index(bob_api, bob, team):
    kept_after_leaving(bob, "acme/app")
    body = prompt(bob_api)
    assert body["mode"] == "individual"
    assert TEAM_INDEX.strip() not in body["text"] and PRIVATE_INDEX.strip() not in body["text"]


def test_auto_memory_off_disables_the_section(alice_api, team, alice):
    set_flag("auto_memory", False, user=alice)
    body = prompt(alice_api)
    assert body == {"text": "", "mode": "disabled", "sections": [], "indexes": []}


def test_daily_log_mode_wins_over_team_memory_while_consolidation_distills(alice_api, team, alice):
    set_flag("daily_log_mode", True, user=alice)
    body = prompt(alice_api, memory_dir=AGENT_DIR)
    assert body["mode"] == "daily-log"
    assert f"`{AGENT_DIR}/logs/" in body["text"] and "distills the logs" in body["text"]
    set_flag("consolidation", False, user=alice)
    body = prompt(alice_api, memory_dir=AGENT_DIR)
    assert body["mode"] == "combined"
    assert "/logs/" not in body["text"] and "distill" not in body["text"]


def test_skip_index_leaves_out_the_index(alice_api, team, alice):
    set_flag("skip_index", True, user=alice)
    body = prompt(alice_api)
    assert body["mode"] == "combined"
    assert "Contents of" not in body["text"]
    assert PRIVATE_INDEX.strip() not in body["text"] and TEAM_INDEX.strip() not in body["text"]
    assert body["indexes"] == []


def test_search_past_context_adds_its_section(alice_api, private, alice):
    set_flag("search_past_context", True, user=alice)
    assert prompt(alice_api)["sections"] == [*INDIVIDUAL, "## Searching past context"]


def long_index(store, lines: int) -> list[str]:
    entries = [f"- [Note {i}](note_{i}.md) — hook {i}" for i in range(1, lines + 1)]
    Path(store.path, "MEMORY.md").write_text("\n".join(entries) + "\n")
    return entries


def test_an_index_over_200_lines_is_cut_with_a_warning(alice_api, private):
    entries = long_index(private, 250)
    body = prompt(alice_api)
    [info] = body["indexes"]
    assert info["was_line_truncated"] is True and info["was_byte_truncated"] is False
    assert info["line_count"] == 250
    text = body["text"]
    assert entries[199] + "\n" in text and entries[200] not in text
    assert "> WARNING: MEMORY.md is 250 lines (limit: 200)." in text
    assert "one line under ~200 chars" in text


def test_an_index_over_25000_bytes_is_cut_by_size(alice_api, private):
    entry = "- [Long](long.md) — " + "x" * 180
    Path(private.path, "MEMORY.md").write_text("\n".join([entry] * 150) + "\n")
    [info] = prompt(alice_api)["indexes"]
    assert info["was_byte_truncated"] is True and info["was_line_truncated"] is False
    assert info["line_count"] == 150 and info["byte_count"] > 25_000


def test_the_index_max_lines_flag_changes_the_cap(alice_api, private, alice):
    entries = long_index(private, 120)
    set_flag("index_max_lines", 50, user=alice)
    body = prompt(alice_api)
    assert body["indexes"][0]["was_line_truncated"] is True
    assert entries[49] + "\n" in body["text"] and entries[50] not in body["text"]
    assert "MEMORY.md is 120 lines (limit: 50)." in body["text"]
    assert "cut off after 50 lines" in body["text"]  # the instructions name the cap too


def test_a_project_override_beats_the_global_value(alice_api, alice, private):
    long_index(private, 120)
    other = resolve_store(alice, "acme/other", "private")
    long_index(other, 120)
    set_flag("index_max_lines", 300, user=alice)
    set_flag("index_max_lines", 50, project=private.project, user=alice)

    mine = prompt(alice_api)["indexes"][0]
    assert mine["was_line_truncated"] is True
    theirs = prompt(alice_api, project="acme/other")["indexes"][0]
    assert theirs["was_line_truncated"] is False
    assert Project.objects.get(key="acme/other").pk == other.project.pk


def test_an_index_loaded_event_is_recorded(alice_api, alice, team):
    long_index(team, 250)
    prompt(alice_api)
    flush_events()
    events = Event.objects.filter(kind="index_loaded").order_by("pk")
    assert [e.store_id for e in events] == [team.project.stores.get(kind="private").pk, team.pk]
    assert events[1].fields == {
        "file_count": 0,
        "line_count": 250,
        "truncated_by_lines": True,
        "truncated_by_bytes": False,
    }
    assert events[0].fields["line_count"] == 1 and events[0].user == alice


@pytest.mark.parametrize("method", ["get", "post"])
def test_prompt_needs_a_token(method):
    response = getattr(APIClient(), method)("/api/v1/prompt", {"project": "acme/app"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("method", ["get", "post"])
def test_unknown_fields_are_refused(alice_api, private, method):
    body = prompt(alice_api, status=400, method=method, mode="combined")
    assert body["error"]["code"] == "invalid"
    assert body["error"]["details"] == {"mode": ["Unknown field."]}


def test_a_project_is_required(alice_api):
    response = alice_api.post("/api/v1/prompt", {}, format="json")
    assert response.status_code == 400
    assert "project" in response.json()["error"]["details"]
