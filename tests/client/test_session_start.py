"""SessionStart with a real server and a real memory dir: an approved change made in memhub
reaches the agent's next session (pulled by sync's own rules, never over a local edit), the
team index when the agent has no team memory of its own, and a line on what waits for review;
with a slow or down server, nothing written and nothing said (docs/design.md §16, §18)."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pytest

from memapp.client.sync_state import state_path
from memapp.stores.actions import do_forget_memory, do_save_memory
from memapp.stores.models import Store
from memapp.stores.projects import resolve_store
from teamsync.models import BlockedFile, TeamConflict
from tests.client.conftest import SLUG, Machine, topic

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "0b8e6a9e-4c1d-4f7e-9a52-6c1f2d3e4a5b"


def start(machine: Machine):
    """The SessionStart hook as Claude Code runs it: (its result, the context it adds)."""
    payload = {
        "session_id": SESSION,
        "transcript_path": str(machine.home / "t.jsonl"),
        "cwd": str(machine.checkout),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    result = machine.hook("session-start", payload)
    assert result.returncode == 0, result.stderr
    if not result.stdout:
        return result, ""
    return result, json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def private_store(user) -> Store:
    return Store.objects.get(kind=Store.Kind.PRIVATE, owner=user, project__key=SLUG)


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    machine_a.write("MEMORY.md", "- [Real DB](feedback_db.md) — integration tests, no mocks\n")
    machine_a.write(
        "feedback_db.md",
        topic("Real DB", "Integration tests hit a real database", body="Use the real DB.\n"),
    )
    machine_a.sync()
    return machine_a


def edit_in_memhub(user, body: str = "Use the real DB, and reset it per test.\n") -> None:
    """What saving the edit form in the browser does."""
    do_save_memory(
        private_store(user),
        user,
        name="Real DB",
        description="Integration tests hit a real database, reset per test",
        memory_type="feedback",
        body=body,
        path="feedback_db.md",
        via="ui",
    )


# --- pulling the server's changes --------------------------------------------------------------


def test_an_edit_made_in_memhub_reaches_the_next_session(a, alice):
    edit_in_memhub(alice)

    _, text = start(a)

    assert "Use the real DB, and reset it per test." in a.read("feedback_db.md")
    index = a.read("MEMORY.md")
    assert "reset per test" in index
    # Claude Code loaded the old MEMORY.md before the hook ran: the new one is in the context.
    assert text.startswith(
        f"Contents of {a.memory_dir / 'MEMORY.md'} (changed in memhub since this session "
        "loaded it; read this instead of the earlier copy):\n\n"
    )
    assert index.strip() in text
    # The pull kept sync's state: the next sync has nothing to do.
    assert a.sync().stdout.strip().startswith("uploaded 0, downloaded 0, deleted 0 local / 0")


def test_a_memory_forgotten_in_memhub_is_gone_from_the_next_session(a, alice):
    do_forget_memory(private_store(alice), alice, "feedback_db.md", via="ui")

    _, text = start(a)

    assert not (a.memory_dir / "feedback_db.md").exists()
    assert "feedback_db.md" not in a.read("MEMORY.md")
    assert f"{a.memory_dir / 'MEMORY.md'} was emptied in memhub" in text


def test_a_store_directory_missing_on_the_server_deletes_nothing_here(a, alice):
    """An unmounted volume or a moved data dir lists no files: not a store emptied in memhub."""
    before = {p.name: p.read_text() for p in a.memory_dir.glob("*.md")}
    server_dir = Path(private_store(alice).path)
    server_dir.rename(server_dir.with_name("memory-away"))
    try:
        start(a)
    finally:
        server_dir.with_name("memory-away").rename(server_dir)

    assert {p.name: p.read_text() for p in a.memory_dir.glob("*.md")} == before
    assert "feedback_db.md" in before


def test_a_local_edit_is_never_overwritten_by_the_pull(a, alice):
    a.write("feedback_db.md", topic("Real DB", "Integration tests hit a real DB", body="Mine.\n"))
    edit_in_memhub(alice)

    start(a)

    assert "Mine." in a.read("feedback_db.md")  # left for sync, which keeps both
    result = a.sync(status=1)
    assert "kept yours, saved the server's as feedback_db.remote-" in result.stderr


def test_a_new_machine_starts_with_the_servers_memory(a, machine_b, server):
    machine_b.login(server)

    start(machine_b)

    assert machine_b.files() == a.files()
    assert machine_b.sync().stdout.startswith("uploaded 0, downloaded 0,")


def test_a_slow_server_writes_nothing_and_says_nothing(a, alice, server, slow_proxy):
    edit_in_memhub(alice)
    before = a.files()
    a.extra_env.update(MEMHUB_URL=slow_proxy(server.url, 3.0), MEMHUB_TOKEN=server.token)
    a.default_budget()
    started = time.monotonic()

    result, text = start(a)

    # It gave up at its 0.7 s budget (plus its start-up, slower on a busy machine), long
    # before the server's answer.
    assert time.monotonic() - started < 2.0
    assert (result.stdout, text) == ("", "")
    assert a.files() == before


def test_a_down_server_writes_nothing_and_says_nothing(machine_a, closed_port):
    machine_a.extra_env.update(MEMHUB_URL=f"http://127.0.0.1:{closed_port}", MEMHUB_TOKEN="mh_x")
    machine_a.default_budget()

    result, text = start(machine_a)

    assert (result.stdout, text) == ("", "")
    assert machine_a.files() == {}


def test_a_running_sync_is_left_to_take_the_changes_itself(a, alice, server):
    edit_in_memhub(alice)
    state = state_path(a.config_dir / "sync", server.url, private_store(alice).pk, a.memory_dir)
    fd = os.open(state.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)

        start(a)

        assert "Use the real DB.\n" in a.read("feedback_db.md")
    finally:
        os.close(fd)


# --- the team index, and what waits for review -------------------------------------------------


@pytest.fixture
def team(alice, a):
    store = resolve_store(alice, SLUG, "team")
    (Path(store.path) / "MEMORY.md").write_text(
        "- [Deploys](deploys.md) — deploys go through ArgoCD\n"
    )
    return store


def test_the_team_index_is_added_when_the_agent_has_no_team_memory_of_its_own(a, team):
    _, text = start(a)

    assert text == (
        f"Contents of {a.memory_dir / 'team' / 'MEMORY.md'} (shared team memory index, synced "
        'with your team):\n\n<team-memory-content source="shared">\n'
        "- [Deploys](deploys.md) — deploys go through ArgoCD\n</team-memory-content>"
    )


def test_a_memory_dir_that_cannot_be_made_still_gets_the_team_index(machine_b, server, team):
    machine_b.login(server)
    blocker = machine_b.memory_dir.parent  # a file where its folder should be
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder")
    result, text = start(machine_b)
    assert result.stderr == ""
    assert "- [Deploys](deploys.md) — deploys go through ArgoCD" in text
    assert blocker.read_text() == "not a folder"  # nothing pulled, nothing broken


def test_no_team_index_when_the_agent_syncs_team_memory_itself(a, team):
    (a.memory_dir / "team").mkdir()
    (a.memory_dir / "team" / ".memory-sync").write_text("{}")

    _, text = start(a)

    assert text == ""


def test_a_line_says_what_waits_for_review(a, alice, team, server):
    TeamConflict.objects.create(store=team, key="deploys.md", kind="edit", ours="a", theirs="b")
    BlockedFile.objects.create(store=team, key="ci.md", reason=BlockedFile.Reason.SECRET)
    BlockedFile.objects.create(store=team, key="big.md", reason=BlockedFile.Reason.TOO_LARGE)

    _, text = start(a)

    assert text.splitlines()[-1] == (
        f"memhub: waiting for your review: team sync conflicts (1) at {server.url}/sync/; "
        f"files kept back from team sync (2) at {server.url}/sync/"
    )
