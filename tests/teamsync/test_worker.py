"""Team sync in the background: the clock enqueues a sync task when "Sync now" was pressed or
changes are older than the 2 s debounce, and the task worker (`db_worker`, on the database
backend) runs it; a `teamsync push` killed with SIGKILL at any step loses nothing, tears
nothing, leaves no lock held, and the next run completes."""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import select
import signal
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from memapp.stores.actions import do_save_memory
from memapp.stores.models import Event
from teamsync.models import TeamSyncStatus
from teamsync.scheduling import due
from tests.conftest import background_tick
from tests.memdir.test_secret_rules import clean_memory_file, fake_tokens
from tests.teamsync.gitutil import git, make_bare, tip_files
from tests.teamsync.instance import Instance


def _set_status(**fields) -> None:
    TeamSyncStatus.objects.filter(pk=TeamSyncStatus.get().pk).update(**fields)


def _syncs() -> int:
    return Event.objects.filter(kind="sync_pull").count()


def _tick() -> list[dict]:
    """The team sync results of one background tick."""
    return [r for r in background_tick() if isinstance(r, dict) and "pushed" in r]


# --- when the worker syncs ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_a_sync_runs_as_a_task_when_sync_now_was_pressed(team_store, dora, remote):
    dora.write("reference_oncall.md", "Dora carries the pager.\n")
    dora.sync()
    _set_status(last_pull_at=timezone.now())  # the periodic pull is not due
    assert _tick() == []
    assert _syncs() == 0
    assert not (Path(team_store.path) / "reference_oncall.md").exists()

    _set_status(requested_at=timezone.now())
    (result,) = _tick()
    assert _syncs() == 1
    assert (Path(team_store.path) / "reference_oncall.md").read_text() == (
        "Dora carries the pager.\n"
    )
    assert TeamSyncStatus.get().requested_at is None
    assert result["written"] == 1 and result["error"] is None
    assert TeamSyncStatus.get().queued_task_id == ""  # done: the next one may be enqueued


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_changes_are_pushed_once_they_are_two_seconds_old(team_store, alice, remote):
    do_save_memory(
        team_store, alice, name="Deploy", description="d", memory_type="project", body="x\n"
    )
    _set_status(last_pull_at=timezone.now())
    assert _tick() == []
    assert git(remote, "for-each-ref") == ""  # debounced: the last change is too recent

    _set_status(dirty_at=timezone.now() - timedelta(seconds=2.5))
    (result,) = _tick()
    assert result["pushed"] is True
    assert "project_deploy.md" in tip_files(remote, "acme/app")
    status = TeamSyncStatus.get()
    assert status.dirty_at is None and status.last_push_at is not None


def test_due_runs_the_periodic_pull_without_pushing_a_suppressed_remote():
    now = timezone.now()
    fresh = TeamSyncStatus(last_pull_at=now)
    assert due(fresh, now, 60) == (False, True)
    assert due(TeamSyncStatus(last_pull_at=now - timedelta(seconds=61)), now, 60) == (True, True)
    assert due(TeamSyncStatus(), now, 60) == (True, True)  # never pulled
    dirty = TeamSyncStatus(last_pull_at=now, dirty_at=now - timedelta(seconds=1))
    assert due(dirty, now, 60)[0] is False
    dirty.dirty_at = now - timedelta(seconds=2)
    assert due(dirty, now, 60) == (True, True)
    stopped = TeamSyncStatus(
        last_pull_at=now - timedelta(seconds=61),
        dirty_at=now - timedelta(minutes=10),
        suppressed_reason="repository not found",
    )
    assert due(stopped, now, 60) == (True, False)  # pull, but do not hammer the remote
    stopped.last_pull_at = now - timedelta(minutes=5)
    assert due(stopped, now, 60) == (True, True)  # every few minutes it tries again
    stopped.last_pull_at, stopped.requested_at = now, now
    assert due(stopped, now, 60) == (True, True)  # or at once when a person asks


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_the_worker_never_prints_credentials_of_the_remote(settings, capsys):
    token = fake_tokens(14)["gitlab-pat"]
    settings.MEMHUB_TEAM_REMOTE = f"https://oauth2:{token}@127.0.0.1:9/acme/team-memory.git"
    _set_status(last_pull_at=timezone.now(), requested_at=timezone.now())
    (result,) = _tick()
    assert token not in str(result)
    with pytest.raises(SystemExit):
        call_command("teamsync", "pull")
    out, err = capsys.readouterr()
    assert "127.0.0.1:9/acme/team-memory.git" in out
    assert token not in out + err
    assert token not in str(list(Event.objects.values_list("fields", flat=True)))
    assert token not in str(TeamSyncStatus.objects.values().get())


def test_due_waits_a_little_after_a_failure_that_may_pass():
    now = timezone.now()
    failed = TeamSyncStatus(
        last_pull_at=now - timedelta(seconds=3),
        dirty_at=now - timedelta(seconds=10),
        last_error="ssh: connect to host git.acme.test port 22: Connection refused",
    )
    assert due(failed, now, 60) == (False, True)
    failed.last_pull_at = now - timedelta(seconds=30)
    assert due(failed, now, 60) == (True, True)
    failed.last_pull_at, failed.requested_at = now, now
    assert due(failed, now, 60) == (True, True)


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_an_unreachable_remote_is_not_retried_on_every_tick(
    team_store, alice, settings, tmp_path, monkeypatch
):
    calls = tmp_path / "ssh-calls"
    ssh = tmp_path / "refusing-ssh"
    ssh.write_text(
        f'#!/bin/sh\necho "called $*" >> {calls}\n'
        "echo 'ssh: connect to host git.acme.test port 22: Connection refused' >&2\nexit 255\n"
    )
    ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    settings.MEMHUB_TEAM_REMOTE = "ssh://git@git.acme.test/acme/team-memory.git"
    do_save_memory(
        team_store, alice, name="Deploy", description="d", memory_type="project", body="x\n"
    )
    assert not calls.exists()  # the commit itself never touched the network
    _set_status(dirty_at=timezone.now() - timedelta(seconds=3), last_pull_at=timezone.now())
    for _ in range(5):
        _tick()
    # (git first runs `ssh -G` to learn which ssh it is: not a connection.)
    connections = [line for line in calls.read_text().splitlines() if " -G " not in line]
    assert len(connections) == 1
    status = TeamSyncStatus.get()
    assert "Connection refused" in status.last_error
    assert status.suppressed_reason == ""  # it may pass: not suppressed, just not hammered
    assert status.dirty_at is not None  # the change is still waiting, committed


# --- SIGKILL in the middle of a push -----------------------------------------------------------

PROJECT_DIR = "-home-dev-app"
FILES = 40  # git stops at the step by itself (below): no need for a push long enough to catch


# A `git` that stops at one step: it tells the test through a FIFO, then waits to be killed.
# At `push` it stops in the receiving end, once the push has started (the remote is a local
# path: `--receive-pack` names the program git starts there).
GIT_THAT_STOPS = """#!/bin/sh
here=$(dirname "$0")
if [ "$1" = "$STOP_AT" ]; then
  echo "$1" > "$here/stopped"
  exec sleep 600
fi
if [ "$1" = push ] && [ "$STOP_AT" = receive-pack ]; then
  shift
  exec /usr/bin/git push --receive-pack="$here/receive-pack" "$@"
fi
exec /usr/bin/git "$@"
"""
RECEIVE_PACK_THAT_STOPS = """#!/bin/sh
echo receive-pack > "$(dirname "$0")/stopped"
exec sleep 600
"""


def _stopping_git(directory: Path) -> Path:
    directory.mkdir()
    for name, script in (("git", GIT_THAT_STOPS), ("receive-pack", RECEIVE_PACK_THAT_STOPS)):
        (directory / name).write_text(script)
        (directory / name).chmod(0o755)
    os.mkfifo(directory / "stopped")
    return directory


def _kill_during(instance: Instance, step: str, shim: Path) -> bool:
    """Start `teamsync push` and SIGKILL it (with its git children, as a crash or an OOM kill
    of the service would) while git is at `step`. False if the push finished first."""
    # Opened before the push starts, so the shim's write never blocks.
    fifo = os.open(shim / "stopped", os.O_RDONLY | os.O_NONBLOCK)
    path = f"{shim}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    process = instance.popen("teamsync", "push", env={"PATH": path, "STOP_AT": step})
    try:
        while process.poll() is None:
            ready, _, _ = select.select([fifo], [], [], 0.5)
            if ready and os.read(fifo, 64):
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return True
        return False
    finally:
        process.communicate()
        os.close(fifo)


def _lock_is_free(lock: Path) -> bool:
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def _digests(files: dict[str, str | bytes]) -> dict[str, str]:
    return {
        k: hashlib.sha256(v if isinstance(v, bytes) else v.encode()).hexdigest()
        for k, v in files.items()
    }


@pytest.mark.parametrize("step", ["fast-import", "push", "receive-pack"])
def test_a_push_killed_with_sigkill_loses_nothing_and_the_next_run_completes(tmp_path, step):
    remote = make_bare(tmp_path / "team.git")
    machine = Instance(tmp_path / "data", tmp_path / "claude", remote, admin="ana")
    team = machine.team_dir(PROJECT_DIR)
    team.mkdir(parents=True)
    rng = random.Random(step)
    written = {f"project_note_{n:04d}.md": clean_memory_file(rng) for n in range(FILES)}
    for key, text in written.items():
        (team / key).write_text(text, encoding="utf-8")
    machine.start()

    killed = _kill_during(machine, step, _stopping_git(tmp_path / "bin"))
    assert killed, f"the push finished before git ran {step!r}"

    # The lock died with its holder, and the store is exactly what the agent wrote.
    assert _lock_is_free(machine.data_dir / "team-clone.lock")
    on_disk = {p.name: p.read_bytes() for p in team.iterdir() if p.suffix == ".md"}
    assert _digests(on_disk) == _digests(written)

    result = machine.run("teamsync", "push")
    assert "pushed yes" in result.stdout, result.stderr
    shared = tip_files(remote, PROJECT_DIR)
    assert _digests(shared) == _digests(written)
    assert git(remote, "fsck", "--no-dangling").strip() == ""
    clone = machine.data_dir / "team-clone"
    assert [p.name for p in clone.iterdir()] == [".git"]  # nothing checked out
    assert git(clone, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    # A further run has nothing left to do.
    again = machine.run("teamsync", "push").stdout
    assert "committed 0" in again and "pushed no" in again
