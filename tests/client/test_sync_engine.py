"""The sync engine in-process: its three-way decision table, batching, a server that refuses a
secret the local rules missed, a server that changes during the sync, and remote keys that must
never name a path outside the memory dir."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from memapp.client.http import ApiError, Client, Reply
from memapp.client.project import Project
from memapp.client.sync import (
    Action,
    conflict_copy_key,
    merge_index_lines,
    plan_sync,
    scan_local,
    sync_project,
)
from memapp.client.sync_state import SyncBusy, exclusive, state_path
from memapp.memdir.store_files import MAX_BATCH_BYTES, checksum
from tests.client.conftest import SLUG, topic
from tests.client.test_sync import fake_github_token

L, R, B, X = "sha256:l", "sha256:r", "sha256:b", "sha256:x"


@pytest.mark.parametrize(
    ("local", "remote", "base", "kind", "conflict"),
    [
        (X, X, None, None, False),  # already the same: nothing to send
        (X, X, B, None, False),
        (B, R, B, "download", False),
        (None, R, None, "download", False),  # new on the server
        (B, None, B, "delete_local", False),  # deleted on the server, unchanged here
        (L, B, B, "upload", False),
        (L, None, None, "upload", False),  # new here
        (None, B, B, "delete_remote", False),  # deleted here, unchanged on the server
        (L, R, B, "keep_both", True),  # both edited
        (L, R, None, "keep_both", True),  # both created differently
        (None, R, B, "download", True),  # deleted here, edited there: restored
        (L, None, B, "upload", True),  # edited here, deleted there: uploaded again
    ],
)
def test_the_three_way_decision(local, remote, base, kind, conflict):
    def only(checksum):
        return {} if checksum is None else {"k.md": checksum}

    actions, settled = plan_sync(only(local), only(remote), only(base))

    if kind is None:
        assert actions == []
        assert settled == {"k.md": local}
    else:
        assert [(a.kind, a.key, bool(a.conflict)) for a in actions] == [(kind, "k.md", conflict)]
        assert actions[0] == Action(kind, "k.md", local, remote, actions[0].conflict)


def test_a_key_gone_from_both_sides_is_forgotten():
    assert plan_sync({}, {}, {"k.md": B}) == ([], {"k.md": None})


def test_a_conflict_copy_sits_beside_the_file_and_never_overwrites_another():
    remote = "sha256:" + "ab12cd34" + "0" * 56

    assert conflict_copy_key("notes/db.md", remote, lambda key: False) == (
        "notes/db.remote-ab12cd34.md"
    )
    taken = {"db.remote-ab12cd34.md", "db.remote-ab12cd34-2.md"}
    assert conflict_copy_key("db.md", remote, taken.__contains__) == "db.remote-ab12cd34-3.md"


def test_the_local_scan_leaves_out_team_logs_symlinks_and_other_files(tmp_path):
    memory = tmp_path / "memory"
    (memory / "team").mkdir(parents=True)
    (memory / "logs" / "2026").mkdir(parents=True)
    (memory / "sub").mkdir()
    (memory / "a.md").write_text("a")
    (memory / "sub" / "b.md").write_text("b")
    (memory / "team" / "t.md").write_text("t")
    (memory / "logs" / "2026" / "l.md").write_text("l")
    (memory / "notes.txt").write_text("n")
    (tmp_path / "secret.md").write_text("outside")
    (memory / "link.md").symlink_to(tmp_path / "secret.md")

    checksums, untouchable = scan_local(memory)

    assert checksums == {"a.md": checksum(b"a"), "sub/b.md": checksum(b"b")}
    assert untouchable == {"link.md"}


# --- against a real server ---------------------------------------------------------------------


class CountingClient(Client):
    """A real client that also remembers the batches it sent."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[bytes] = []

    def post(self, path, body):
        if path.endswith("/batch"):
            self.batches.append(json.dumps(body).encode())
        return super().post(path, body)


@pytest.fixture
def project(tmp_path) -> Project:
    memory = tmp_path / "memory"
    memory.mkdir()
    return Project(memory, SLUG, "-home-alice-widgets", memory.parent)


real_server = pytest.mark.django_db(transaction=True)


@real_server
def test_uploads_go_in_batches_under_200000_bytes(server, project, tmp_path):
    for number in range(12):
        (project.memory_dir / f"big_{number:02}.md").write_text(
            topic(f"Big {number}", "large", body="x" * 40_000 + "\n")
        )
    client = CountingClient(server.url, server.token)

    report = sync_project(client, project, tmp_path / "state", progress=False)

    assert len(report.uploaded) == 12
    assert len(client.batches) >= 3
    assert all(len(batch) < MAX_BATCH_BYTES for batch in client.batches)


@real_server
def test_a_secret_only_the_server_catches_is_dropped_and_the_rest_is_sent(
    server, project, tmp_path
):
    (project.memory_dir / "ci.md").write_text(topic("CI", "ci", body=f"{fake_github_token()}\n"))
    (project.memory_dir / "db.md").write_text(topic("DB", "real database"))
    client = CountingClient(server.url, server.token)

    report = sync_project(client, project, tmp_path / "state", progress=False, secret_scan=None)

    assert len(client.batches) == 2  # refused whole, then sent again without the secret
    assert report.uploaded == ["db.md"]
    assert report.skipped_secret_keys == ["ci.md"]
    assert report.secrets[0]["rule_id"] == "github-pat"
    assert report.summary().endswith("conflicts 0, skipped 1 (secrets)")


@real_server
def test_a_change_on_the_server_during_the_sync_becomes_a_conflict_not_a_lost_write(
    server, project, tmp_path
):
    (project.memory_dir / "db.md").write_text(topic("DB", "first"))
    state = tmp_path / "state"
    sync_project(Client(server.url, server.token), project, state, progress=False)
    (project.memory_dir / "db.md").write_text(topic("DB", "edited here"))

    class RacingClient(Client):
        """Another machine saves db.md just before this sync's batch arrives."""

        raced = False

        def post(self, path, body):
            if path.endswith("/batch") and not self.raced:
                self.raced = True
                store = path.split("/")[4]
                self.request(
                    "PUT",
                    f"/api/v1/stores/{store}/files/db.md",
                    {"content": topic("DB", "edited elsewhere")},
                )
            return super().post(path, body)

    report = sync_project(RacingClient(server.url, server.token), project, state, progress=False)

    assert len(report.conflicts) == 1
    files = {p.name: p.read_text() for p in project.memory_dir.iterdir()}
    assert "edited here" in files.pop("db.md")
    [(copy_name, copy)] = files.items()
    assert copy_name.startswith("db.remote-")
    assert "edited elsewhere" in copy


def test_a_local_edit_made_while_the_server_copy_is_fetched_is_not_overwritten(tmp_path):
    project = Project(tmp_path / "memory", SLUG, "-x", tmp_path)
    server = FakeServer({"db.md": "v1\n"})
    state = tmp_path / "state"
    sync_project(server, project, state, progress=False)
    server.files["db.md"] = "v2 from another machine\n"
    fetch = server.get

    def get(path):
        if "/files/db.md" in path:  # an agent saves the file as the download is under way
            (project.memory_dir / "db.md").write_text("the agent's new text\n")
        return fetch(path)

    server.get = get
    report = sync_project(server, project, state, progress=False)

    assert (project.memory_dir / "db.md").read_text() == "the agent's new text\n"
    assert report.downloaded == []
    assert report.errors == ["db.md: changed during the sync; left for next time"]
    server.get = fetch
    report = sync_project(server, project, state, progress=False)  # both sides changed
    assert (project.memory_dir / "db.md").read_text() == "the agent's new text\n"
    assert len(report.conflicts) == 1 and report.uploaded == ["db.md"]


# --- remote keys are checked before they name a local path -------------------------------------


class FakeServer:
    """Just enough of the API to offer hostile keys (a real server refuses to store them);
    its answers are `Reply`s, as `Client`'s are."""

    url = "http://memhub.invalid"

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def post(self, path, body):
        if path.endswith("/resolve"):
            store = {"id": 7, "kind": "private", "label": "x", "project": SLUG, "file_count": 0}
            return Reply(store.items(), self.url, path)
        batch = {"written": [], "unchanged": [], "deleted": [], "checksums": {}}
        return Reply(batch.items(), self.url, path)

    def get(self, path):
        if path.endswith("?view=hashes"):
            checksums = {k: checksum(v.encode()) for k, v in self.files.items()}
            return Reply([("checksums", checksums)], self.url, path)
        key = unquote(path.split("/files/", 1)[1])
        if key not in self.files:
            raise ApiError(404, "not_found", "Not found.")
        text = self.files[key]
        file = {"key": key, "content": text, "checksum": checksum(text.encode())}
        return Reply(file.items(), self.url, path)


@pytest.mark.parametrize(
    "key",
    [
        "../escape.md",
        "/etc/evil.md",
        "%2e%2e/escape.md",
        "sub/../../escape.md",
        "team/t.md",
        "logs/l.md",
        "run.sh",
        "a\\..\\escape.md",
    ],
)
def test_hostile_remote_keys_are_refused_and_nothing_is_written_outside(tmp_path, key):
    project = Project(tmp_path / "home" / "memory", SLUG, "-x", tmp_path)
    server = FakeServer({key: "pwned", "ok.md": "fine"})

    report = sync_project(server, project, tmp_path / "state", progress=False)

    assert report.downloaded == ["ok.md"]
    assert report.errors
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert [p for p in written if not p.startswith("state/")] == ["home/memory/ok.md"]
    assert not Path("/etc/evil.md").exists()


def test_index_lines_merge_without_loss():
    assert merge_index_lines("- a\n- b\n", "- a\n- c\n\n") == "- a\n- b\n- c\n"
    assert merge_index_lines("- a", "- b\n") == "- a\n- b\n"
    assert merge_index_lines("- a\n", "- a\n") == "- a\n"
    assert merge_index_lines("", "- b\n") == "- b\n"


def test_two_syncs_of_one_memory_dir_never_run_at_once(tmp_path):
    project = Project(tmp_path / "memory", SLUG, "-x", tmp_path)
    server = FakeServer({})
    state = tmp_path / "state"
    state.mkdir()
    lock = state_path(state, server.url, 7, project.memory_dir).with_suffix(".lock")

    with exclusive(lock), pytest.raises(SyncBusy):
        sync_project(server, project, state, progress=False)
    assert sync_project(server, project, state, progress=False).summary().startswith("uploaded 0")
