"""Team sync inside memhub: commits authored by whoever changed a team store, publishing,
secret filtering, caps, suppressed pushes, conflicts and tombstones. The other members are
git engines of their own (another machine's clone and store) on the same bare remote."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from memapp.memdir.store_files import FileRejected
from memapp.stores.actions import do_forget_memory, do_save_memory
from memapp.stores.flags import set_flag
from memapp.stores.models import Event
from memapp.stores.tokens import do_create_api_token
from teamsync.engine import TeamClone
from teamsync.models import BlockedFile, StoreSyncState, TeamConflict, TeamSyncStatus, Tombstone
from teamsync.scheduling import due
from teamsync.service import do_commit_team_change, do_resolve_conflict, do_sync_team, team_clone
from tests.conftest import background_tick
from tests.memdir.test_secret_gate import GATE_FLAGS, detect_secrets_kinds
from tests.memdir.test_secret_rules import clean_memory_file, clean_memory_files, fake_tokens, plant
from tests.teamsync.gitutil import MARKERS, authors, git, history, make_bare, memory, tip_files

pytestmark = pytest.mark.django_db

FOLDER = "acme/app"
DEPLOY = "Ship on Tuesdays.\n\n**Why:** fewer incidents.\n**How to apply:** plan releases.\n"


def save(store, user, name: str, body: str = DEPLOY, path: str | None = None):
    return do_save_memory(
        store,
        user,
        name=name,
        description=f"{name} in one line",
        memory_type="project",
        body=body,
        path=path,
    )


def events(kind: str) -> list[dict]:
    return [e.fields for e in Event.objects.filter(kind=kind).order_by("pk")]


def every_object(repo: Path) -> str:
    """The content of every object in a repository, reachable or not (bytes as latin-1)."""
    result = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=repo,
        capture_output=True,
        check=True,
    )
    return result.stdout.decode("latin-1")


def root(store) -> Path:
    return Path(store.path)


# --- local commits -----------------------------------------------------------------------------


def test_every_change_from_the_ui_or_the_api_is_a_commit_by_its_author_at_once(
    client, team_store, alice, bob, remote
):
    bob.first_name, bob.last_name, bob.email = "Bob", "Builder", "bob@acme.test"
    bob.save(update_fields=["first_name", "last_name", "email"])
    client.force_login(alice)
    response = client.post(
        reverse("memory_create", args=[team_store.pk]),
        {"name": "Deploy", "description": "How we deploy", "type": "project", "body": DEPLOY},
    )
    assert response.status_code == 302
    _, token = do_create_api_token(bob, "laptop")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = reverse("api_file", args=[team_store.pk, "reference_links.md"])
    assert api.put(url, {"content": memory("Links", "Runbooks.\n")}, format="json").status_code
    assert api.delete(url).status_code == 204
    client.post(reverse("memory_forget", args=[team_store.pk, "project_deploy.md"]))

    clone = team_clone().clone_dir
    log = git(clone, "log", "--format=%an <%ae>|%s", "-4").splitlines()
    assert [line.split("|")[0] for line in log] == [
        "alice <alice@memhub.local>",
        "Bob Builder <bob@acme.test>",
        "Bob Builder <bob@acme.test>",
        "alice <alice@memhub.local>",
    ]
    assert "delete project_deploy.md" in log[0]
    assert "delete reference_links.md" in log[1]
    assert "update reference_links.md" in log[2]
    assert "update MEMORY.md, project_deploy.md" in log[3]
    assert [p.name for p in clone.iterdir()] == [".git"]  # nothing checked out
    # Nothing was published yet: the push waits for the worker.
    assert git(remote, "for-each-ref") == ""
    assert TeamSyncStatus.get().dirty_at is not None


@pytest.mark.parametrize("clone_exists", [True, False], ids=["clone", "fresh"])
def test_a_change_is_committed_without_waiting_on_the_network(
    team_store, alice, settings, tmp_path, monkeypatch, clone_exists
):
    if clone_exists:
        do_sync_team()
    # The remote is now a host that never answers: any git network call would hang on it.
    called = tmp_path / "ssh-was-called"
    ssh = tmp_path / "slow-ssh"
    ssh.write_text(f"#!/bin/sh\ntouch {called}\nsleep 20\nexit 255\n")
    ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    settings.MEMHUB_TEAM_REMOTE = "ssh://git@git.acme.test/acme/team-memory.git"

    started = time.monotonic()
    save(team_store, alice, "Deploy")
    assert time.monotonic() - started < 5
    assert not called.exists()
    clone = team_clone().clone_dir
    assert authors(clone)[0] == "alice"
    assert (
        git(clone, "show", f"HEAD:{FOLDER}/project_deploy.md")
        == (root(team_store) / "project_deploy.md").read_text()
    )


def test_a_change_found_while_a_sync_runs_waits_for_the_next_sync(team_store, alice, monkeypatch):
    """An agent's write the live mirror reports while a sync runs (after its commit), and a
    "Sync now" meanwhile, are not cleared by that sync's end: the next one judges and shares
    the write, instead of the scheduled pull a minute later."""
    from teamsync import service

    integrate = service._integrate

    def meanwhile(*args):
        service.sync_changed_on_disk(team_store)
        service.request_sync()
        integrate(*args)

    monkeypatch.setattr(service, "_integrate", meanwhile)
    assert do_sync_team().error is None
    status = TeamSyncStatus.get()
    assert status.dirty_at is not None and status.requested_at is not None

    monkeypatch.setattr(service, "_integrate", integrate)
    assert do_sync_team().error is None  # nothing new to publish: the change is done with
    status = TeamSyncStatus.get()
    assert status.dirty_at is None and status.requested_at is None


def test_sync_publishes_what_was_committed(team_store, alice, remote):
    save(team_store, alice, "Deploy")
    report = do_sync_team()
    assert report.pushed and report.error is None
    files = tip_files(remote, FOLDER)
    assert files["project_deploy.md"] == (root(team_store) / "project_deploy.md").read_text()
    assert files["MEMORY.md"] == "- [Deploy](project_deploy.md) — Deploy in one line\n"
    assert authors(remote, "main")[0] == "alice"
    status = TeamSyncStatus.get()
    assert status.dirty_at is None and status.last_push_at is not None
    [push] = events("sync_push")
    assert push["success"] is True and push["error"] is None
    assert push["files_uploaded"] == 2
    [pull] = events("sync_pull")
    assert pull["success"] is True and pull["not_modified"] is True


def test_files_an_agent_wrote_behind_memhubs_back_are_committed_by_the_next_sync(
    team_store, remote
):
    (root(team_store) / "reference_runbook.md").write_text(memory("Runbook", "Page Lin.\n"))
    report = do_sync_team()
    assert report.committed == 1 and report.pushed
    assert authors(remote, "main")[0] == "memhub"
    assert tip_files(remote, FOLDER) == {"reference_runbook.md": memory("Runbook", "Page Lin.\n")}


def test_a_hidden_file_is_neither_listed_counted_nor_shared(client, team_store, bob, dora, remote):
    """docs/design.md §6a: the review UI and team sync agree that hidden names are not
    memories (a draft an agent keeps in `.drafts/` stays on this machine, unlisted)."""
    (root(team_store) / "reference_runbook.md").write_text(memory("Runbook", "Page Lin.\n"))
    (root(team_store) / ".hidden.md").write_text(memory("Hidden", "Not a memory.\n"))
    (root(team_store) / ".drafts").mkdir()
    (root(team_store) / ".drafts" / "n.md").write_text(memory("Draft", "Half done.\n"))

    client.force_login(bob)
    client.post(reverse("store_rescan", args=[team_store.pk]))
    page = client.get(reverse("store", args=[team_store.pk])).content.decode()
    team_store.refresh_from_db()
    report = do_sync_team()
    dora.pull()

    assert "Runbook" in page and "Hidden" not in page and "Draft" not in page
    assert team_store.file_count == 1
    assert report.committed == 1 and report.pushed
    assert tip_files(remote, FOLDER) == {"reference_runbook.md": memory("Runbook", "Page Lin.\n")}
    assert dora.read("reference_runbook.md") and dora.read(".hidden.md") is None
    assert "Not a memory" not in history(remote) and "Half done" not in history(remote)


def test_a_memory_from_a_teammate_arrives_in_the_store_and_the_mirror(team_store, dora, remote):
    dora.write("reference_oncall.md", memory("On-call", "Dora carries the pager.\n", "reference"))
    dora.sync()
    report = do_sync_team()
    assert report.written == 1
    assert (root(team_store) / "reference_oncall.md").read_text() == memory(
        "On-call", "Dora carries the pager.\n", "reference"
    )
    assert team_store.files.get(path="reference_oncall.md").name == "On-call"
    [pull] = events("sync_pull")
    assert pull["files_written"] == 1 and pull["not_modified"] is False


def test_a_key_deleted_in_memhub_leaves_a_tombstone_and_the_deletion_propagates(
    team_store, alice, dora, remote
):
    file = save(team_store, alice, "Deploy")
    do_sync_team()
    dora.pull()
    text = (root(team_store) / file.path).read_bytes()
    do_forget_memory(team_store, alice, file.path)
    tomb = Tombstone.objects.get(store=team_store, key=file.path)
    assert tomb.checksum == "sha256:" + hashlib.sha256(text).hexdigest()
    do_sync_team()
    assert file.path not in tip_files(remote, FOLDER)
    dora.pull()
    assert dora.read(file.path) is None
    assert "project_deploy.md" not in dora.read("MEMORY.md")
    # Writing it again lifts the tombstone.
    save(team_store, alice, "Deploy")
    assert not Tombstone.objects.filter(store=team_store, key=file.path).exists()


def test_a_push_beaten_by_a_teammate_is_integrated_and_retried(
    team_store, alice, dora, remote, monkeypatch
):
    save(team_store, alice, "Deploy")
    original = TeamClone.push_once
    raced = []

    def teammate_pushes_first(clone):
        if not raced:  # dora pushes after our fetch, before our push
            raced.append(True)
            dora.write("reference_oncall.md", memory("On-call", "Dora.\n", "reference"))
            dora.sync()
        return original(clone)

    monkeypatch.setattr(TeamClone, "push_once", teammate_pushes_first)
    report = do_sync_team()
    assert report.pushed and report.push_attempts == 2 and report.error is None
    assert set(tip_files(remote, FOLDER)) == {
        "MEMORY.md",
        "project_deploy.md",
        "reference_oncall.md",
    }
    assert (root(team_store) / "reference_oncall.md").exists()
    [push] = events("sync_push")
    assert push["success"] is True and push["conflict_retries"] == 1 and push["batches"] == 2


# --- secrets -----------------------------------------------------------------------------------


def _secret_value(kind: str, line: str) -> str:
    if kind == "JSON Web Token":
        return re.search(r"eyJ\S+", line).group()
    if kind == "Basic Auth Credentials":
        return re.search(r"app:([^@]+)@", line).group(1)
    return re.search(r'"([^"]+)"', line).group(1)


def _plant_secrets(directory: Path) -> dict[str, tuple[str, int, list[str]]]:
    """One memory per fast rule and per detect-secrets kind: key -> (rule id, line, values)."""
    rng = random.Random(41)
    planted = {}
    for rule_id, token in fake_tokens(41).items():
        text, line = plant(clean_memory_file(rng), token, rng)
        values = [token] if rule_id != "private-key" else token.splitlines()[1:-1]
        planted[f"notes_{rule_id}.md"] = (rule_id, line, text, values)
    for kind, line_text in detect_secrets_kinds(41).items():
        text, line = plant(clean_memory_file(rng), "", rng)
        lines = text.split("\n")
        lines[line - 1] = line_text
        rule_id = GATE_FLAGS[kind][0]
        slug = kind.lower().replace(" ", "_")
        planted[f"incident_{slug}.md"] = (
            rule_id,
            line,
            "\n".join(lines),
            [_secret_value(kind, line_text)],
        )
    for key, (_, _, text, _) in planted.items():
        (directory / key).write_text(text, encoding="utf-8")
    return {key: (rule_id, line, values) for key, (rule_id, line, _, values) in planted.items()}


def test_no_secret_ever_reaches_the_shared_repository(team_store, alice, remote):
    planted = _plant_secrets(root(team_store))
    clean = clean_memory_file(random.Random(1))
    (root(team_store) / "project_clean.md").write_text(clean)
    report = do_sync_team()
    assert report.pushed

    assert tip_files(remote, FOLDER) == {"project_clean.md": clean}
    everything = history(remote) + every_object(remote)
    everything_local = git(team_clone().clone_dir, "log", "-p", "--all") + every_object(
        team_clone().clone_dir / ".git"
    )
    for key, (rule_id, _, values) in planted.items():
        assert key not in everything
        for value in values:
            assert value not in everything, rule_id
            assert value not in everything_local, rule_id

    blocked = {b.key: b for b in BlockedFile.objects.filter(store=team_store)}
    assert set(blocked) == set(planted)
    for key, (rule_id, line, values) in planted.items():
        assert blocked[key].reason == BlockedFile.Reason.SECRET
        assert {"rule_id": rule_id, "line": line} in [
            {"rule_id": h["rule_id"], "line": h["line"]} for h in blocked[key].hits
        ]
        for hit in blocked[key].hits:
            assert set(hit) == {"rule_id", "label", "line"} and hit["label"]
        stored = json.dumps(blocked[key].hits)
        assert not any(value in stored for value in values)

    [event] = events("secret_skipped")
    assert event == {
        "file_count": len(planted),
        "rule_ids": sorted({h["rule_id"] for b in blocked.values() for h in b.hits}),
    }
    assert {rule_id for rule_id, _, _ in planted.values()} <= set(event["rule_ids"])
    all_events = json.dumps([e.fields for e in Event.objects.all()])
    for key, (_, _, values) in planted.items():
        assert key not in all_events
        assert not any(value in all_events for value in values)


def test_a_token_in_a_file_name_never_reaches_the_shared_repository(
    client, team_store, alice, remote
):
    """An agent that names a file after a token: the name is kept back like a secret in the
    text (not in the tree, not in a commit message), and the Team sync page says where; it
    and the Events page show the name redacted."""
    token = fake_tokens(6)["github-pat"]
    (root(team_store) / f"reference_{token}.md").write_text(memory("CI", "The runner.\n"))
    (root(team_store) / "project_clean.md").write_text(memory("Clean", "Nothing to hide.\n"))
    do_sync_team()

    assert set(tip_files(remote, FOLDER)) == {"project_clean.md"}
    assert token not in history(remote) + every_object(remote)
    blocked = BlockedFile.objects.get(store=team_store)
    assert blocked.reason == BlockedFile.Reason.SECRET
    assert blocked.hits == [
        {"rule_id": "github-pat", "label": "GitHub personal access token", "line": 0}
    ]
    client.force_login(alice)
    page = client.get(reverse("sync")).content.decode()
    assert "GitHub personal access token (<code>github-pat</code>), in its name" in page
    assert "reference_[REDACTED:GitHub personal access token].md" in page
    assert token not in page
    # The Events page names the files a `secret_skipped` kept back the same way.
    events = client.get(reverse("events")).content.decode()
    assert "reference_[REDACTED:GitHub personal access token].md" in events
    assert token not in events


def test_a_blocked_file_is_reported_once_and_pushed_once_fixed(team_store, alice, remote):
    token = fake_tokens(3)["github-pat"]
    path = root(team_store) / "reference_ci.md"
    path.write_text(memory("CI", f"The runner uses {token}.\n"))
    for _ in range(3):
        do_sync_team()
    assert len(events("secret_skipped")) == 1
    assert BlockedFile.objects.get(key="reference_ci.md").hits == [
        {"rule_id": "github-pat", "label": "GitHub personal access token", "line": 6}
    ]
    path.write_text(memory("CI", "The runner reads its token from the vault.\n"))
    do_sync_team()
    assert not BlockedFile.objects.exists()
    assert "reference_ci.md" in tip_files(remote, FOLDER)
    assert token not in history(remote)


def test_a_blocked_file_that_is_deleted_leaves_the_blocked_list(team_store, remote):
    path = root(team_store) / "reference_ci.md"
    path.write_text(memory("CI", f"{fake_tokens(4)['npm-access-token']}\n"))
    do_sync_team()
    assert BlockedFile.objects.count() == 1
    path.unlink()
    do_sync_team()
    assert not BlockedFile.objects.exists()


def test_a_secret_is_refused_at_the_door_when_saved_through_memhub(team_store, alice, remote):
    token = fake_tokens(5)["slack-bot-token"]
    with pytest.raises(FileRejected, match="secret"):
        save(team_store, alice, "CI", body=f"token {token}\n")
    assert list(root(team_store).iterdir()) == []
    do_sync_team()
    assert token not in history(remote)


def test_five_hundred_clean_realistic_memories_are_all_committed(team_store, remote):
    texts = clean_memory_files(500, seed=77)
    for n, text in enumerate(texts):
        (root(team_store) / f"project_note_{n:03d}.md").write_text(text, encoding="utf-8")
    report = do_sync_team()
    assert report.pushed
    assert report.committed == 500
    assert not BlockedFile.objects.exists()
    assert events("secret_skipped") == []
    files = tip_files(remote, FOLDER)
    assert len(files) == 500
    assert files["project_note_123.md"] == texts[123]


# --- caps --------------------------------------------------------------------------------------


def test_over_the_entry_cap_new_entries_are_refused_while_edits_keep_syncing(
    team_store, alice, dora, remote
):
    set_flag("team_max_entries", 3)
    notes = [save(team_store, alice, f"Note {n}") for n in range(1, 4)]
    do_sync_team()
    assert events("entries_capped") == []

    extra = save(team_store, alice, "Note 4")
    save(
        team_store, alice, "Note 1", body="Edited after the cap was reached.\n", path=notes[0].path
    )
    report = do_sync_team()
    do_sync_team()

    assert report.pushed
    files = tip_files(remote, FOLDER)
    assert sorted(k for k in files if k != "MEMORY.md") == sorted(n.path for n in notes)
    assert "Edited after the cap was reached." in files[notes[0].path]
    assert BlockedFile.objects.get(key=extra.path).reason == BlockedFile.Reason.CAPPED
    assert events("entries_capped") == [{"total_entries": 4, "dropped_count": 1, "max_entries": 3}]
    dora.pull()
    assert "Edited after the cap was reached." in dora.read(notes[0].path)
    # Room again (a memory forgotten): the refused one goes with the next sync.
    do_forget_memory(team_store, alice, notes[2].path)
    do_sync_team()
    assert extra.path in tip_files(remote, FOLDER)
    assert not BlockedFile.objects.exists()


def test_a_file_over_250000_bytes_is_blocked_as_too_large(team_store, remote):
    head = memory("Dump", "")
    (root(team_store) / "reference_big.md").write_text(head + "x" * (250_001 - len(head)))
    (root(team_store) / "reference_edge.md").write_text(head + "y" * (250_000 - len(head)))
    do_sync_team()
    blocked = BlockedFile.objects.get(key="reference_big.md")
    assert blocked.reason == BlockedFile.Reason.TOO_LARGE and blocked.hits == []
    assert set(tip_files(remote, FOLDER)) == {"reference_edge.md"}
    assert events("secret_skipped") == []


# --- a push that cannot succeed ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the task worker commits
@pytest.mark.parametrize("broken", ["missing", "not_a_repository"])
def test_a_push_that_cannot_succeed_is_suppressed_once_and_resumes_when_fixed(
    team_store, alice, settings, tmp_path, broken
):
    target = tmp_path / "shared" / "team-memory.git"
    if broken == "not_a_repository":
        target.mkdir(parents=True)
        (target / "README").write_text("just a directory")
    settings.MEMHUB_TEAM_REMOTE = str(target)
    save(team_store, alice, "Deploy")

    report = do_sync_team()
    assert report.suppressed and not report.pushed
    status = TeamSyncStatus.get()
    assert status.suppressed_status and str(target) in status.suppressed_reason
    [suppressed] = events("push_suppressed")
    assert set(suppressed) == {"reason", "status"} and str(target) in suppressed["reason"]

    # The worker leaves it alone for minutes (no storm), then tries again, still once recorded.
    later = timezone.now() + timedelta(seconds=30)
    assert due(TeamSyncStatus.get(), later, 60) == (False, False)
    for _ in range(5):
        background_tick()
    assert len(events("sync_pull")) == 1
    do_sync_team()
    assert len(events("push_suppressed")) == 1

    # Fixed: the repository exists now.
    if broken == "not_a_repository":
        shutil.rmtree(target)
    make_bare(target)
    report = do_sync_team()
    assert report.pushed
    status = TeamSyncStatus.get()
    assert status.suppressed_reason == "" and status.suppressed_at is None
    assert "project_deploy.md" in tip_files(target, FOLDER)


# --- conflicts ---------------------------------------------------------------------------------

OURS = DEPLOY.replace("Ship on Tuesdays.", "Ship on Thursdays (alice).")
THEIRS = DEPLOY.replace("Ship on Tuesdays.", "Ship on Wednesdays (dora).")


@pytest.fixture
def conflict(team_store, alice, dora, remote) -> TeamConflict:
    """alice (here) and dora (elsewhere) reworded the same line of one memory."""
    file = save(team_store, alice, "Deploy")
    do_sync_team()
    dora.pull()
    dora.write(file.path, dora.read(file.path).replace("Ship on Tuesdays.", THEIRS.split("\n")[0]))
    dora.sync()
    save(team_store, alice, "Deploy", body=OURS, path=file.path)
    report = do_sync_team()
    assert len(report.conflicts) == 1
    return TeamConflict.objects.get()


def test_overlapping_edits_become_a_conflict_and_both_versions_are_kept(
    conflict, team_store, remote
):
    assert conflict.store == team_store and conflict.key == "project_deploy.md"
    assert conflict.kind == "edit"
    assert "Ship on Tuesdays." in conflict.base
    assert "Ship on Thursdays (alice)." in conflict.ours
    assert "Ship on Wednesdays (dora)." in conflict.theirs
    assert (root(team_store) / "project_deploy.md").read_text() == conflict.ours
    assert tip_files(remote, FOLDER)["project_deploy.md"] == conflict.theirs
    log = history(remote)
    assert "+Ship on Thursdays (alice)." in log and "+Ship on Wednesdays (dora)." in log
    assert not any(marker in log for marker in MARKERS)
    [event] = events("conflict")
    assert event == {"path": "project_deploy.md", "reason": "edit"}
    # Held: later syncs neither push ours nor overwrite it.
    do_sync_team()
    assert (root(team_store) / "project_deploy.md").read_text() == conflict.ours
    assert tip_files(remote, FOLDER)["project_deploy.md"] == conflict.theirs


@pytest.mark.parametrize("choice", ["ours", "theirs", "merged", "delete"])
def test_a_conflict_is_resolved_and_the_choice_is_published(
    conflict, team_store, bob, dora, remote, choice
):
    merged = DEPLOY.replace("Ship on Tuesdays.", "Ship on Wednesdays or Thursdays.")
    do_resolve_conflict(conflict, bob, choice, merged if choice == "merged" else None)
    do_sync_team()
    expected = {
        "ours": conflict.ours,
        "theirs": conflict.theirs,
        "merged": merged,
        "delete": None,
    }[choice]
    path = root(team_store) / "project_deploy.md"
    assert (path.read_text() if path.exists() else None) == expected
    assert tip_files(remote, FOLDER).get("project_deploy.md") == expected
    dora.pull()
    assert dora.read("project_deploy.md") == expected
    conflict.refresh_from_db()
    assert conflict.resolved_at and conflict.resolved_by == bob and conflict.resolution == choice
    assert events("conflict")[-1] == {
        "path": "project_deploy.md",
        "reason": "edit",
        "resolution": choice,
    }
    if choice in ("ours", "merged"):
        assert authors(remote, "main")[0] == "bob"
    assert not any(marker in history(remote) for marker in MARKERS)
    # Settled: nothing moves on the next syncs.
    head = git(remote, "rev-parse", "main")
    do_sync_team()
    assert git(remote, "rev-parse", "main") == head


def test_an_unknown_resolution_is_refused(conflict, bob):
    with pytest.raises(ValueError):
        do_resolve_conflict(conflict, bob, "both")
    with pytest.raises(ValueError):
        do_resolve_conflict(conflict, bob, "merged", None)
    conflict.refresh_from_db()
    assert conflict.resolved_at is None


@pytest.mark.parametrize("deleter", ["here", "there"])
def test_an_edit_against_a_deletion_is_a_conflict_resolved_by_deleting(
    team_store, alice, dora, remote, deleter
):
    file = save(team_store, alice, "Deploy")
    do_sync_team()
    dora.pull()
    if deleter == "here":
        dora.write(file.path, dora.read(file.path).replace("Tuesdays", "Fridays"))
        dora.sync()
        do_forget_memory(team_store, alice, file.path)
    else:
        dora.delete(file.path)
        lines = dora.read("MEMORY.md").splitlines(keepends=True)
        dora.write("MEMORY.md", "".join(line for line in lines if file.path not in line))
        dora.sync()
        save(team_store, alice, "Deploy", body=OURS, path=file.path)
    do_sync_team()
    conflict = TeamConflict.objects.get()
    assert conflict.kind == "edit_delete"
    if deleter == "here":
        assert conflict.ours is None and "Fridays" in conflict.theirs
    else:
        assert "Thursdays" in conflict.ours and conflict.theirs is None
    # The edit is never lost: the shared repository keeps it until someone decides, with its
    # index line; so does the store that kept the edit.
    shared = tip_files(remote, FOLDER)
    assert file.path in shared and f"({file.path})" in shared["MEMORY.md"]
    if deleter == "there":
        assert f"({file.path})" in (root(team_store) / "MEMORY.md").read_text()

    do_resolve_conflict(conflict, alice, "delete")
    do_sync_team()
    shared = tip_files(remote, FOLDER)
    assert file.path not in shared and file.path not in shared.get("MEMORY.md", "")
    assert not (root(team_store) / file.path).exists()
    assert file.path not in (root(team_store) / "MEMORY.md").read_text()  # its line went too
    dora.pull()
    assert dora.read(file.path) is None
    assert file.path not in dora.read("MEMORY.md")


def test_resolving_an_index_conflict_keeps_the_entries_of_files_kept_back(
    team_store, alice, dora, remote
):
    save(team_store, alice, "Deploy")
    do_sync_team()
    index = root(team_store) / "MEMORY.md"
    kept = "- [Dump](reference_dump.md) — the incident log\n"
    (root(team_store) / "reference_dump.md").write_text(memory("Dump", "x" * 260_000 + "\n"))
    index.write_text(index.read_text() + kept)
    do_sync_team()
    assert "reference_dump.md" in BlockedFile.objects.values_list("key", flat=True)
    dora.pull()
    dora.delete("MEMORY.md")
    dora.sync()
    index.write_text(index.read_text().replace("Deploy", "Deploying"))
    do_sync_team()
    conflict = TeamConflict.objects.get(key="MEMORY.md")
    assert conflict.kind == "edit_delete" and conflict.theirs is None

    do_resolve_conflict(conflict, alice, "delete")
    do_sync_team()
    assert index.read_text() == kept  # deleted as chosen, but not the entry of a local file
    assert "MEMORY.md" not in tip_files(remote, FOLDER)


def test_a_local_edit_racing_a_merge_is_never_written_over_theirs(team_store, alice, dora, remote):
    """A file edited here after the sync merged a teammate's change to it, before the sync
    brought that change into the store: the next commit must merge, not overwrite."""
    file = save(team_store, alice, "Deploy")
    do_sync_team()
    dora.pull()
    dora.write(file.path, dora.read(file.path) + "Added by dora at the end.\n")
    dora.sync()
    clone = team_clone()
    with clone.locked():  # the worker's integrate, then the agent writes before the apply
        clone.ensure()
        clone.fetch()
        clone.integrate()
    text = (root(team_store) / file.path).read_text()
    (root(team_store) / file.path).write_text(text.replace("Tuesdays", "Thursdays"))
    do_commit_team_change(team_store, alice)
    do_sync_team()
    final = (root(team_store) / file.path).read_text()
    assert "Thursdays" in final and "Added by dora at the end." in final
    assert tip_files(remote, FOLDER)[file.path] == final
    assert StoreSyncState.objects.get(store=team_store).base[file.path].startswith("sha256:")
