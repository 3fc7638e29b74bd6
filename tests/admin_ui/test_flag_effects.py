"""Flags take effect at once where they belong: one test (at least) per flag in effect, each seen
through the API, the protocol, the UI or a command, the way an agent or a person meets it."""

from __future__ import annotations

import datetime
import os
import random
import re
import time
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from memapp.memdir import secret_gate as secretgate
from memapp.stores.flags import FLAGS, set_flag
from memapp.stores.models import Event, Project
from memapp.stores.projects import resolve_store
from teamsync.models import BlockedFile, TeamSyncStatus
from teamsync.service import do_sync_team
from tests.admin_ui.conftest import client_for, text
from tests.api.conftest import api_client
from tests.api.fake_anthropic import FakeAnthropic
from tests.conftest import background_tick, write_memory

pytestmark = pytest.mark.django_db

PROTOCOL = "/api/claude_code/team_memory?repo=acme%2Fapp"
DAY = 86_400


def put(
    store,
    filename: str,
    name: str,
    description: str,
    type_="feedback",
    body="Body.\n",
    age_s: float = 60,
) -> Path:
    path = write_memory(Path(store.path), filename, name, description, type_, body)
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path


def prompt(client, project: str = "acme/app") -> dict:
    response = client.post("/api/v1/prompt", {"project": project}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def recall(client, query: str, project: str = "acme/app", **extra) -> dict:
    body = {"project": project, "query": query, **extra}
    response = client.post("/api/v1/recall", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def paths(body: dict) -> list[str]:
    return [memory["path"] for memory in body["memories"]]


def settings_post(user, name: str, value: str, project: Project | None = None):
    """Change a flag the way an admin does: through the Settings page."""
    scope = str(project.pk) if project is not None else ""
    response = client_for(user).post(
        reverse("flag", kwargs={"name": name}), {"scope": scope, "value": value, "note": "test"}
    )
    assert response.status_code == 302, text(response)


@pytest.fixture
def alice_api(alice):
    return api_client(alice)


@pytest.fixture
def db_note(acme):
    """A memory in alice's private acme store that a database question finds."""
    put(
        acme.alice_private,
        "feedback_testing.md",
        "Integration tests use a real database",
        "Integration tests must hit a real database, not mocks",
    )
    return acme.alice_private


# -- prompt assembly ----------------------------------------------------------------------------


def test_auto_memory_off_for_one_project_disables_its_prompt(alice, alice_api, acme):
    """(and recall, extraction, consolidation, team writes: tests/lifecycle/test_memory_off.py)"""
    resolve_store(alice, "acme/other", "private")
    settings_post(alice, "auto_memory", "false", acme.project)
    body = prompt(alice_api)
    assert (body["mode"], body["text"], body["sections"]) == ("disabled", "", [])
    assert prompt(alice_api, "acme/other")["mode"] == "individual"


def test_an_admin_switches_the_site_to_combined_team_prompts(alice, alice_api, acme):
    set_flag("team_memory", False)
    assert prompt(alice_api)["mode"] == "individual"
    settings_post(alice, "team_memory", "true")
    body = prompt(alice_api)
    assert body["mode"] == "combined"
    assert body["sections"][:2] == ["# Memory", "## Memory scope"]


def test_team_memory_off_closes_the_protocol_and_team_recall(alice, alice_api, acme):
    put(acme.team, "project_deploy.md", "Deploys", "Deploys go through ArgoCD", "project")
    assert alice_api.get(PROTOCOL).status_code == 200
    assert paths(recall(alice_api, "how do deploys go through argocd", scope="team"))
    settings_post(alice, "team_memory", "false")
    assert alice_api.get(PROTOCOL).status_code == 404
    assert recall(alice_api, "how do deploys go through argocd", scope="team")["memories"] == []


def test_daily_log_mode_asks_for_todays_log_and_consolidation_must_distill_it(
    alice, alice_api, acme
):
    today = datetime.date.today()
    settings_post(alice, "daily_log_mode", "true")
    body = prompt(alice_api)
    assert body["mode"] == "daily-log"
    assert f"logs/{today:%Y}/{today:%m}/{today.isoformat()}.md" in body["text"]
    assert "distills the logs" in body["text"]
    settings_post(alice, "consolidation", "false")  # nothing would distill the logs
    body = prompt(alice_api)
    assert body["mode"] != "daily-log" and "distill" not in body["text"]


def test_the_consolidation_flags_decide_when_a_store_is_due(alice, acme):
    from memapp.lifecycle.gates import check_gates
    from memapp.lifecycle.models import Session

    store = acme.alice_private
    write_memory(Path(store.path), "user_role.md", "Role", "Alice is a backend engineer", "user")
    now = timezone.now()
    Session.objects.create(
        owner=alice, project=store.project, store=store, session_id="s-1", last_entry_at=now
    )
    lock = Path(store.path) / ".consolidate-lock"  # a local agent consolidated 3 hours ago
    lock.write_text("")
    then = (now - datetime.timedelta(hours=3)).timestamp()
    os.utime(lock, (then, then))
    # Each check a quarter of an hour after the last, past the session scan's throttle.
    clock = (now + datetime.timedelta(minutes=15 * i) for i in range(1, 10))

    def gate() -> str:
        (verdict,) = check_gates(next(clock), [store])
        return verdict.gate

    assert gate() == "too_soon"  # 24 hours by default
    settings_post(alice, "consolidation_min_hours", "2")
    assert gate() == "few_sessions"  # 1 of 5
    settings_post(alice, "consolidation_min_sessions", "1")
    assert gate() == "due"
    settings_post(alice, "consolidation", "false")
    assert gate() == "flag_off"


def test_skip_index_leaves_the_index_out_of_the_prompt(alice, alice_api, acme):
    Path(acme.alice_private.path, "MEMORY.md").write_text("- [Role](user_role.md) — who\n")
    assert "Contents of " in prompt(alice_api)["text"]
    settings_post(alice, "skip_index", "true")
    body = prompt(alice_api)
    assert "Contents of " not in body["text"] and body["indexes"] == []


def test_search_past_context_adds_its_section(alice, alice_api, acme):
    assert "## Searching past context" not in prompt(alice_api)["sections"]
    settings_post(alice, "search_past_context", "true")
    assert "## Searching past context" in prompt(alice_api)["sections"]


# -- index caps: the prompt and the store page's meter --------------------------------------------


def index_of(lines: int) -> str:
    return "".join(f"- [Note {i}](note_{i}.md) — hook {i}\n" for i in range(lines))


def meter(response, meter_id: str) -> tuple[str, str]:
    match = re.search(
        rf'<div class="meter ?([^"]*)" id="{meter_id}">.*?<span class="value">([^<]*)</span>',
        response.content.decode(),
        re.S,
    )
    assert match, f"no meter {meter_id!r}"
    return match.group(1).strip(), match.group(2)


def test_index_max_lines_cuts_the_prompt_and_moves_the_meter(alice, alice_api, acme):
    Path(acme.alice_private.path, "MEMORY.md").write_text(index_of(10))
    store_page = reverse("store", kwargs={"store_id": acme.alice_private.pk})
    assert prompt(alice_api)["indexes"][0]["was_line_truncated"] is False
    assert meter(client_for(alice).get(store_page), "line-meter") == ("", "10 / 200")

    settings_post(alice, "index_max_lines", "5", acme.project)
    body = prompt(alice_api)
    assert body["indexes"][0]["was_line_truncated"] is True
    assert "hook 4\n" in body["text"] and "hook 5\n" not in body["text"]
    assert "limit: 5" in body["text"]
    assert meter(client_for(alice).get(store_page), "line-meter") == ("over", "10 / 5")


def test_index_max_bytes_cuts_the_prompt_and_moves_the_meter(alice, alice_api, acme):
    index = index_of(10)
    Path(acme.alice_private.path, "MEMORY.md").write_text(index)
    settings_post(alice, "index_max_bytes", "100")
    body = prompt(alice_api)
    assert body["indexes"][0]["was_byte_truncated"] is True
    assert "hook 9" not in body["text"]
    store_page = reverse("store", kwargs={"store_id": acme.alice_private.pk})
    size = len(index.strip().encode())
    assert meter(client_for(alice).get(store_page), "byte-meter") == ("over", f"{size} / 100")


# -- recall -------------------------------------------------------------------------------------


def test_recall_off_for_one_project_recalls_nothing_there_only(alice, alice_api, db_note):
    other = resolve_store(alice, "acme/other", "private")
    put(
        other,
        "feedback_testing.md",
        "Integration tests use a real database",
        "Integration tests must hit a real database, not mocks",
    )
    query = "should integration tests use a real database?"
    assert paths(recall(alice_api, query)) == ["feedback_testing.md"]
    settings_post(alice, "recall", "false", db_note.project)
    body = recall(alice_api, query)
    assert (body["memories"], body["rendered"], body["selector"]) == ([], "", "disabled")
    assert paths(recall(alice_api, query, project="acme/other")) == ["feedback_testing.md"]


def test_recall_max_limits_how_many_memories_come_back(alice, alice_api, acme):
    for i in range(4):
        put(
            acme.alice_private,
            f"feedback_db_{i}.md",
            f"Database rule {i}",
            f"Database migrations rule number {i} for the postgres database",
            age_s=60 + i,
        )
    query = "database migrations rules for postgres"
    assert len(recall(alice_api, query)["memories"]) == 4
    settings_post(alice, "recall_max", "2")
    assert len(recall(alice_api, query)["memories"]) == 2


@pytest.fixture
def fake(settings):
    with FakeAnthropic() as server:
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = server.url
        settings.MEMHUB_RECALL_TIMEOUT = 5.0
        yield server


def test_recall_model_is_the_model_the_selector_asks(alice, alice_api, db_note, fake):
    fake.answer(["feedback_testing.md"])
    assert recall(alice_api, "real database?")["selector"] == "llm"
    assert fake.requests[-1].body["model"] == "claude-sonnet-4-6"
    settings_post(alice, "recall_model", "claude-haiku-4-5", db_note.project)
    body = recall(alice_api, "real database?")
    assert (body["selector"], paths(body)) == ("llm", ["feedback_testing.md"])
    assert fake.requests[-1].body["model"] == "claude-haiku-4-5"


def test_recall_offline_only_never_calls_the_model(alice, alice_api, db_note, fake):
    settings_post(alice, "recall_offline_only", "true")
    body = recall(alice_api, "should integration tests use a real database?")
    assert (body["selector"], paths(body)) == ("offline", ["feedback_testing.md"])
    assert fake.requests == []


def test_scan_max_files_limits_the_candidates_to_the_newest(alice, alice_api, db_note):
    os.utime(Path(db_note.path, "feedback_testing.md"), (time.time() - 3 * DAY,) * 2)
    put(db_note, "user_role.md", "Role", "Alice is a backend engineer", "user")
    put(db_note, "reference_wiki.md", "Wiki", "The wiki is at wiki.example.com", "reference")
    query = "should integration tests use a real database?"
    assert paths(recall(alice_api, query)) == ["feedback_testing.md"]
    settings_post(alice, "scan_max_files", "2")
    assert recall(alice_api, query)["memories"] == []


def test_surface_max_bytes_cuts_each_recalled_memory(alice, alice_api, db_note):
    body = "Integration tests must hit a real database.\n" + "More detail here.\n" * 150
    put(
        db_note,
        "feedback_testing.md",
        "Integration tests use a real database",
        "Integration tests must hit a real database, not mocks",
        body=body,
    )
    [memory] = recall(alice_api, "integration tests real database")["memories"]
    assert memory["truncated"] is False
    settings_post(alice, "surface_max_bytes", "500")
    [memory] = recall(alice_api, "integration tests real database")["memories"]
    assert memory["truncated"] is True
    kept, _, note = memory["content"].rpartition("\n\n")
    assert len(kept.encode()) <= 500 and "Read the full file at feedback_testing.md" in note


def test_surface_session_bytes_caps_what_one_session_is_shown(alice, alice_api, db_note):
    put(
        db_note,
        "project_freeze.md",
        "Merge freeze",
        "Merge freeze on main from 2026-03-05",
        "project",
    )
    first, second = "integration tests real database", "merge freeze on main"
    assert paths(recall(alice_api, first, session_id="s1")) == ["feedback_testing.md"]
    assert paths(recall(alice_api, second, session_id="s1")) == ["project_freeze.md"]
    settings_post(alice, "surface_session_bytes", "180")
    assert paths(recall(alice_api, first, session_id="s2")) == ["feedback_testing.md"]
    assert recall(alice_api, second, session_id="s2")["memories"] == []


# -- team memory protocol -----------------------------------------------------------------------


def test_team_max_entries_refuses_a_put_over_the_cap(alice, alice_api, acme):
    entries = {f"note_{i}.md": f"Note {i}.\n" for i in range(3)}
    settings_post(alice, "team_max_entries", "2", acme.project)
    response = alice_api.put(PROTOCOL, {"entries": entries}, format="json")
    assert response.status_code == 413
    details = response.json()["error"]["details"]
    assert details == {
        "error_code": "team_memory_too_many_entries",
        "max_entries": 2,
        "received_entries": 3,
    }
    settings_post(alice, "team_max_entries", "3", acme.project)
    assert alice_api.put(PROTOCOL, {"entries": entries}, format="json").status_code == 200


def test_team_max_entry_bytes_refuses_a_large_entry(alice, alice_api, acme):
    entries = {"big.md": "x" * 2_000}
    assert alice_api.put(PROTOCOL, {"entries": entries}, format="json").status_code == 200
    settings_post(alice, "team_max_entry_bytes", "1000")
    response = alice_api.put(PROTOCOL, {"entries": {"bigger.md": "y" * 2_000}}, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["details"]["error_code"] == "entry_too_large"


def test_protocol_project_creation_lets_everyone_create_projects(alice, bob, acme):
    bob_api = api_client(bob)
    url = "/api/claude_code/team_memory?repo=bob%2Fnew"
    body = {"entries": {"project_start.md": "We started.\n"}}
    assert bob_api.put(url, body, format="json").status_code == 404
    assert not Project.objects.filter(key="bob/new").exists()
    settings_post(alice, "protocol_project_creation", "everyone")
    assert bob_api.put(url, body, format="json").status_code == 200
    assert Project.objects.get(key="bob/new").members.filter(pk=bob.pk).exists()


# -- the secret gate and the sync worker ----------------------------------------------------------


@pytest.fixture
def gate():
    """detect-secrets is configured per process: leave it as the other tests expect it."""
    yield
    secretgate.configure(entropy=False)


def test_secrets_entropy_plugins_turn_on_the_entropy_checks_before_a_push(
    alice, alice_api, acme, gate
):
    checksum = 'checksum = "' + random.Random(7).randbytes(32).hex() + '"'

    def remember(name: str):
        return alice_api.post(
            "/api/v1/remember",
            {
                "project": "acme/app",
                "scope": "team",
                "name": name,
                "description": "a build",
                "type": "reference",
                "body": f"The build.\n{checksum}\n",
            },
            format="json",
        )

    assert remember("Build one").status_code == 201
    assert not BlockedFile.objects.exists()
    settings_post(alice, "secrets_entropy_plugins", "true")
    # A write to team memory through memhub passes the same gate as the push: refused, unwritten.
    refused = remember("Build two")
    assert refused.status_code == 422, refused.content
    [hit] = refused.json()["error"]["details"]["entries"]
    assert hit["rule_id"] == "detect-secrets:Hex High Entropy String"
    team = resolve_store(alice, "acme/app", "team")
    assert not (Path(team.path) / "reference_build_two.md").exists()
    # What an agent writes beside memhub is kept back at the push.
    write_memory(
        Path(team.path),
        "reference_build_three.md",
        "Build three",
        "a build",
        "reference",
        f"The build.\n{checksum}\n",
    )
    do_sync_team()
    [blocked] = BlockedFile.objects.all()
    assert blocked.reason == "secret" and blocked.key.endswith("build_three.md")
    assert [hit["rule_id"] for hit in blocked.hits] == ["detect-secrets:Hex High Entropy String"]
    event = Event.objects.get(kind="secret_skipped")
    assert event.fields == {
        "file_count": 1,
        "rule_ids": ["detect-secrets:Hex High Entropy String"],
    }


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_sync_interval_seconds_decides_when_the_worker_pulls(alice, acme):
    def run_once() -> int:
        TeamSyncStatus.objects.update_or_create(
            pk=1, defaults={"last_pull_at": timezone.now() - datetime.timedelta(seconds=120)}
        )
        background_tick()
        return Event.objects.filter(kind="sync_pull").count()

    settings_post(alice, "sync_interval_seconds", "600")
    assert run_once() == 0
    settings_post(alice, "sync_interval_seconds", "60")
    assert run_once() == 1


def test_every_flag_in_effect_has_an_effect_test_here():
    source = Path(__file__).read_text()
    untested = [
        name
        for name, spec in FLAGS.items()
        if spec.in_effect and f'"{name}"' not in source.replace("def test_", "")
    ]
    assert untested == []


# -- the memory lifecycle (docs/design.md §14) ------------------------------------------------


def upload_session(client, transcript, **fields) -> dict:
    body = {"project": "acme/app", "entries": transcript.entries, **fields}
    url = f"/api/v1/sessions/{transcript.session_id}/entries"
    response = client.post(url, body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def remember_session(entrypoint: str = "cli"):
    from tests.transcripts import Transcript

    transcript = Transcript(entrypoint=entrypoint)
    transcript.turn("remember that we deploy on Fridays", "Noted.")
    return transcript


def test_extraction_off_stores_sessions_but_proposes_nothing(alice, acme):
    from memapp.lifecycle.models import ExtractionRun, Session

    client = api_client(alice)
    set_flag("extraction", False, acme.project)
    assert upload_session(client, remember_session())["extraction"] == "off"
    assert Session.objects.get().entry_count == 2
    assert not ExtractionRun.objects.exists()
    set_flag("extraction", True, acme.project)
    assert upload_session(client, remember_session())["extraction"] == "queued"


def test_extraction_every_n_turns_waits_for_the_nth_turn(alice, acme):
    from tests.transcripts import Transcript

    client = api_client(alice)
    set_flag("extraction_every_n_turns", 3, acme.project)
    transcript = Transcript()
    transcript.turn("first question", "answer")
    assert upload_session(client, transcript)["extraction"] == "waiting"
    transcript.turn("second question", "answer")
    assert upload_session(client, transcript)["extraction"] == "waiting"
    transcript.turn("remember that we deploy on Fridays", "Noted.")
    assert upload_session(client, transcript)["extraction"] == "queued"


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_extraction_non_interactive_lets_sdk_sessions_in(alice, acme):
    from memapp.lifecycle.models import Proposal

    client = api_client(alice)
    assert upload_session(client, remember_session("sdk-cli"))["extraction"] == "waiting"
    set_flag("extraction_non_interactive", True, acme.project)
    assert upload_session(client, remember_session("sdk-cli"))["extraction"] == "queued"
    background_tick()
    assert Proposal.objects.count() == 1


def test_session_summary_off_writes_no_summary(alice, acme):
    from tests.coding_sessions import FIRST_REQUESTS, grow
    from tests.transcripts import Transcript

    client = api_client(alice)
    set_flag("session_summary", False, acme.project)
    transcript = Transcript()
    grow(transcript, 11_000, FIRST_REQUESTS)
    assert upload_session(client, transcript)["summary"] == "off"
    set_flag("session_summary", True, acme.project)
    transcript.turn("One more thing.", "Sure.")
    assert upload_session(client, transcript)["summary"] == "queued"


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_lifecycle_apply_auto_writes_proposals_without_review(alice, acme):
    from memapp.lifecycle.models import Proposal

    client = api_client(alice)
    set_flag("lifecycle_apply", "auto", acme.project)
    upload_session(client, remember_session())
    background_tick()
    proposal = Proposal.objects.get()
    assert proposal.status == "applied"
    assert proposal.decision["decision"] == "auto"
    key = proposal.changes.get().key
    store = resolve_store(alice, "acme/app", "private")
    assert "We deploy on Fridays." in (Path(store.path) / key).read_text()
    set_flag("lifecycle_apply", "review", acme.project)
    upload_session(client, remember_session())
    background_tick()
    assert Proposal.objects.filter(status="pending").count() == 1
