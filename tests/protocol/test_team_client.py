"""`memhub-agent team sync [--watch]` against a real memhub server, run as the real console
script on "machines" (temp homes with a real git checkout of acme/widgets): alice's laptop and
bob's. Server-side hooks count the PUTs and, where a test needs it, write in between."""

from __future__ import annotations

import hashlib
import json
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from rest_framework.response import Response

from memapp.api import team_memory as protocol
from memapp.client.http import NO_RETRY, Client
from memapp.client.team import TeamReport, TeamSync, batches
from memapp.stores.actions import do_put_files
from memapp.stores.models import Project, Store
from memapp.stores.tokens import do_create_api_token
from teamsync.models import StoreSyncState, TeamConflict
from teamsync.service import do_sync_team
from tests.client.conftest import AGENT, SLUG, Machine, Server, git_checkout, topic
from tests.teamsync.gitutil import tip_files

pytestmark = pytest.mark.django_db(transaction=True)

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def summary(pulled=0, pushed=0, batches=0, skipped=0, conflicts=0, version=1) -> str:
    noun = "batch" if batches == 1 else "batches"
    return (
        f"team {SLUG}: pulled {pulled}, pushed {pushed} in {batches} {noun}, "
        f"skipped {skipped} (secrets), conflicts {conflicts}, version {version}"
    )


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def server(live_server, settings, alice) -> Server:
    settings.MEMHUB_DISCOVER = False
    _, token = do_create_api_token(alice, "laptop")
    return Server(live_server.url, token)


@pytest.fixture
def laptop(tmp_path, server) -> Machine:
    """alice's laptop."""
    home = tmp_path / "alice" / "home"
    machine = Machine(home, git_checkout(home / "src" / "widgets"))
    machine.login(server)
    return machine


@pytest.fixture
def desktop(tmp_path, server, bob) -> Machine:
    """bob's machine: the same project checked out elsewhere, logged in as bob."""
    home = tmp_path / "bob" / "home"
    machine = Machine(home, git_checkout(home / "work" / "acme-widgets"))
    _, token = do_create_api_token(bob, "desktop")
    machine.login(Server(server.url, token))
    return machine


@pytest.fixture
def puts(monkeypatch) -> list[dict]:
    """Every PUT the server answers: its keys, body size, If-Match and status."""
    calls: list[dict] = []
    handle = protocol._put

    def counting(request):
        response = handle(request)
        calls.append(
            {
                "keys": sorted(request.data.get("entries", {})),
                "size": int(request.META.get("CONTENT_LENGTH") or 0),
                "if_match": request.headers.get("If-Match"),
                "status": response.status_code,
            }
        )
        return response

    monkeypatch.setattr(protocol, "_put", counting)
    return calls


def team_dir(machine: Machine) -> Path:
    return machine.memory_dir / "team"


def write(machine: Machine, key: str, text: str) -> Path:
    path = team_dir(machine) / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def files(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.md"))}


def team_store() -> Store:
    return Store.objects.get(kind=Store.Kind.TEAM, project__key=SLUG)


def on_server() -> dict[str, str]:
    return files(Path(team_store().path))


def server_version() -> int:
    return StoreSyncState.objects.get(store=team_store()).version


def team_sync(machine: Machine, *args: str, status: int | None = 0) -> subprocess.CompletedProcess:
    """`memhub-agent team sync`, which must exit with `status` (None: not checked here)."""
    result = machine.run("team", "sync", *args)
    if status is not None:
        assert result.returncode == status, result.stderr
    return result


def seed(laptop: Machine, bob) -> dict[str, str]:
    """alice shares three memories from her laptop; bob is a member of the project."""
    entries = {
        "MEMORY.md": "- [Real DB](feedback_db.md) — no mocks\n- [Freeze](project_freeze.md)\n",
        "feedback_db.md": topic("Real DB", "Tests hit a real database"),
        "project_freeze.md": topic("Freeze", "Release freeze 2026-03-05", "project"),
    }
    for key, text in entries.items():
        write(laptop, key, text)
    team_sync(laptop)
    Project.objects.get(key=SLUG).members.add(bob)
    return entries


# --- push and pull ------------------------------------------------------------------------------


def test_a_push_from_one_machine_is_pulled_on_another(laptop, desktop, alice, bob, puts, data_dir):
    write(laptop, "MEMORY.md", "- [Real DB](feedback_db.md) — no mocks\n")
    write(laptop, "feedback_db.md", topic("Real DB", "Tests hit a real database"))
    write(laptop, "notes/project_freeze.md", topic("Freeze", "Freeze 2026-03-05", "project"))

    result = team_sync(laptop)

    assert result.stdout.strip() == summary(pushed=3, batches=1, version=1)
    assert on_server() == files(team_dir(laptop))
    assert [p["if_match"] for p in puts] == [None]  # no team memory yet: unconditional
    project = Project.objects.get(key=SLUG)  # alice is staff: her first PUT created it
    assert list(project.members.all()) == [alice]
    log = subprocess.run(
        ["git", "-C", str(data_dir / "team-clone"), "log", "-1", "--format=%an"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout.strip() == "alice"

    project.members.add(bob)
    result = team_sync(desktop)

    assert result.stdout.strip() == summary(pulled=3, version=1)
    assert files(team_dir(desktop)) == files(team_dir(laptop))
    assert team_dir(desktop) != team_dir(laptop)
    assert team_sync(desktop).stdout.strip() == summary(version=1)
    assert team_sync(laptop).stdout.strip() == summary(version=1)
    assert len(puts) == 1


def test_only_changed_keys_are_uploaded_and_only_changed_files_written(laptop, desktop, bob, puts):
    entries = seed(laptop, bob)
    team_sync(desktop)
    untouched = team_dir(laptop) / "project_freeze.md"
    before = untouched.stat().st_mtime_ns
    puts.clear()

    write(desktop, "feedback_db.md", topic("Real DB", "Tests hit a real database, always"))
    write(desktop, "reference_ci.md", topic("CI", "CI runs on every push", "reference"))
    result = team_sync(desktop)

    assert result.stdout.strip() == summary(pushed=2, batches=1, version=2)
    assert [p["keys"] for p in puts] == [["feedback_db.md", "reference_ci.md"]]
    assert server_version() == 2

    result = team_sync(laptop)

    assert result.stdout.strip() == summary(pulled=2, version=2)
    assert files(team_dir(laptop)) == files(team_dir(desktop)) == on_server()
    assert untouched.stat().st_mtime_ns == before
    assert untouched.read_text() == entries["project_freeze.md"]
    assert len(puts) == 1  # pulling uploads nothing


def test_an_edit_here_is_not_overwritten_by_a_pull_nor_theirs_by_a_push(laptop, desktop, bob):
    seed(laptop, bob)
    team_sync(desktop)
    write(desktop, "feedback_db.md", "bob's edit\n")
    team_sync(desktop)
    write(laptop, "project_freeze.md", "alice's edit\n")

    result = team_sync(laptop)

    assert result.stdout.strip() == summary(pulled=1, pushed=1, batches=1, version=3)
    assert on_server()["feedback_db.md"] == "bob's edit\n"
    assert on_server()["project_freeze.md"] == "alice's edit\n"
    assert files(team_dir(laptop)) == on_server()


TEAM_INDEX = (
    "- [Real DB](feedback_db.md) — no mocks\n"
    "- [Freeze](project_freeze.md) — release freeze\n"
    "- [CI](reference_ci.md) — where CI runs\n"
)


def test_a_member_s_one_line_index_joins_the_team_s_entries_nothing_lost(
    laptop, desktop, bob, puts, data_dir
):
    """The replay: the team index has three entries; bob, who never synced, has a one-line
    index of his own; his sync keeps every entry of the team's and adds his."""
    seed(laptop, bob)
    write(laptop, "reference_ci.md", topic("CI", "CI runs on every push", "reference"))
    write(laptop, "MEMORY.md", TEAM_INDEX)
    team_sync(laptop)
    write(desktop, "project_mine.md", topic("Mine", "bob's own", "project"))
    write(desktop, "MEMORY.md", "- [Mine](project_mine.md) — bob's\n")
    puts.clear()

    result = team_sync(desktop)

    merged = "- [Mine](project_mine.md) — bob's\n" + TEAM_INDEX
    assert "MEMORY.md: changed here and on the server; merged line by line" in result.stderr
    assert "kept yours" not in result.stderr
    assert (team_dir(desktop) / "MEMORY.md").read_text() == merged
    assert on_server()["MEMORY.md"] == merged
    assert all(p["if_match"] for p in puts)  # sent knowing the team's index: taken as it is
    assert team_sync(laptop).returncode == 0
    assert files(team_dir(laptop)) == files(team_dir(desktop)) == on_server()
    # …and in git: the server's team sync publishes the store, every memory and line in it.
    assert do_sync_team().error is None
    in_git = tip_files(data_dir / "team-remote.git", SLUG)
    assert in_git == on_server()
    assert in_git["MEMORY.md"] == merged


def test_an_index_changed_on_both_sides_merges_from_the_last_synced_text(laptop, desktop, bob):
    seed(laptop, bob)
    write(laptop, "reference_ci.md", topic("CI", "CI runs on every push", "reference"))
    write(laptop, "MEMORY.md", TEAM_INDEX)
    team_sync(laptop)
    team_sync(desktop)
    # alice rewords Real DB's line and drops Freeze's; bob adds a line after Freeze's.
    write(
        laptop,
        "MEMORY.md",
        TEAM_INDEX.replace("— no mocks", "— never mock the DB").replace(
            "- [Freeze](project_freeze.md) — release freeze\n", ""
        ),
    )
    team_sync(laptop)
    write(desktop, "project_mine.md", topic("Mine", "bob's own", "project"))
    write(
        desktop,
        "MEMORY.md",
        TEAM_INDEX.replace("freeze\n", "freeze\n- [Mine](project_mine.md) — bob's\n"),
    )

    assert team_sync(desktop).returncode == 0

    expected = (
        "- [Real DB](feedback_db.md) — never mock the DB\n"
        "- [Mine](project_mine.md) — bob's\n"
        "- [CI](reference_ci.md) — where CI runs\n"
    )
    assert (team_dir(desktop) / "MEMORY.md").read_text() == expected
    assert on_server()["MEMORY.md"] == expected


def test_a_crlf_team_index_without_a_final_newline_keeps_its_form(laptop, desktop, bob):
    seed(laptop, bob)
    crlf = TEAM_INDEX.replace("\n", "\r\n").removesuffix("\r\n")
    write(laptop, "reference_ci.md", topic("CI", "CI runs on every push", "reference"))
    (team_dir(laptop) / "MEMORY.md").write_bytes(crlf.encode())
    team_sync(laptop)
    write(desktop, "project_mine.md", topic("Mine", "bob's own", "project"))
    write(desktop, "MEMORY.md", "- [Mine](project_mine.md) — bob's\n")

    team_sync(desktop)

    expected = ("- [Mine](project_mine.md) — bob's\r\n" + crlf).encode()
    assert (team_dir(desktop) / "MEMORY.md").read_bytes() == expected
    assert (Path(team_store().path) / "MEMORY.md").read_bytes() == expected


def test_entries_over_200000_bytes_go_in_several_puts(laptop, puts):
    big = {f"reference_{n}.md": f"# Part {n}\n" + "x" * 60_000 + "\n" for n in range(5)}
    for key, text in big.items():
        write(laptop, key, text)

    result = team_sync(laptop)

    assert len(puts) >= 2
    assert result.stdout.strip() == summary(pushed=5, batches=len(puts), version=len(puts))
    assert all(p["status"] == 200 and p["size"] < 200_000 for p in puts)
    assert sorted(k for p in puts for k in p["keys"]) == sorted(big)
    assert on_server() == big
    # Each batch is conditional on the checksum the previous one returned.
    assert puts[0]["if_match"] is None
    assert all(p["if_match"].startswith('"sha256:') for p in puts[1:])


def test_batches_stay_under_the_limit_and_a_huge_entry_goes_alone():
    entries = {f"{n}.md": "é" * 30_000 for n in range(6)}  # 180,000 bytes of JSON each pair
    entries["huge.md"] = "y" * 240_000

    groups = list(batches(entries))

    for group in groups:
        size = len(json.dumps({"entries": group}).encode())
        assert size < 200_000 or len(group) == 1
    assert [k for g in groups for k in g] == sorted(entries)
    assert {"huge.md"} in [set(g) for g in groups]


# --- conflicts, retries, secrets ------------------------------------------------------------------


def interfere(monkeypatch, bob, times: int) -> list[int]:
    """Before each of the next `times` PUTs, bob's other client writes to the team memory."""
    handle = protocol._put
    done: list[int] = []

    def racing(request):
        if len(done) < times:
            done.append(1)
            do_put_files(team_store(), bob, {f"bob_{len(done)}.md": f"bob {len(done)}\n"})
        return handle(request)

    monkeypatch.setattr(protocol, "_put", racing)
    return done


def test_a_412_race_refetches_the_hashes_and_retries(laptop, bob, puts, monkeypatch):
    seed(laptop, bob)
    puts.clear()
    write(laptop, "feedback_db.md", "alice's edit\n")
    interfere(monkeypatch, bob, times=1)

    result = team_sync(laptop)

    assert [p["status"] for p in puts] == [412, 200]
    assert [p["keys"] for p in puts] == [["feedback_db.md"], ["feedback_db.md"]]
    assert puts[0]["if_match"] != puts[1]["if_match"]
    assert result.stdout.strip() == summary(pushed=1, batches=1, version=3)
    assert on_server()["bob_1.md"] == "bob 1\n"
    assert on_server()["feedback_db.md"] == "alice's edit\n"
    # The other client's write is pulled on the next run, and nothing more is sent.
    assert team_sync(laptop).stdout.strip() == summary(pulled=1, version=3)
    assert files(team_dir(laptop)) == on_server()
    assert len(puts) == 2


def test_a_push_gives_up_after_two_412_retries(laptop, bob, puts, monkeypatch):
    seed(laptop, bob)
    puts.clear()
    write(laptop, "feedback_db.md", "alice's edit\n")
    interfere(monkeypatch, bob, times=10)

    result = team_sync(laptop, status=None)

    assert result.returncode == 1
    assert [p["status"] for p in puts] == [412, 412, 412]
    assert "kept changing" in result.stderr
    assert on_server()["feedback_db.md"] != "alice's edit\n"


def test_a_transient_error_is_retried_with_backoff(laptop, puts, monkeypatch):
    handle = protocol._put
    failures: list[float] = []

    def flaky(request):
        if not failures:
            failures.append(time.monotonic())
            return Response({"error": {"code": "unavailable", "message": "busy"}}, status=503)
        failures.append(time.monotonic())
        return handle(request)

    monkeypatch.setattr(protocol, "_put", flaky)
    write(laptop, "feedback_db.md", "memory\n")

    result = team_sync(laptop)

    assert result.stdout.strip() == summary(pushed=1, batches=1, version=1)
    assert 0.35 <= failures[1] - failures[0] <= 3  # 500 ms ± 25 %, plus the request itself
    assert on_server() == {"feedback_db.md": "memory\n"}


def test_a_file_with_a_secret_is_skipped_and_reported_while_the_rest_arrive(laptop, puts):
    leak = topic("CI", "CI access", "reference", body=f"Token: {GITHUB_TOKEN}\n")
    mailchimp = "0f1e2d3c4b5a69788796a5b4c3d2e1f0-us12"
    keyword = topic("Deploy", "Deploy notes", "project", body=f"mailchimp: {mailchimp}\n")
    write(laptop, "reference_ci.md", leak)
    write(laptop, "project_deploy.md", keyword)  # only the server's detect-secrets sees it
    write(laptop, "feedback_db.md", "clean\n")
    write(laptop, "MEMORY.md", "- [Real DB](feedback_db.md)\n")

    result = team_sync(laptop, status=1)  # files skipped: exit status 1

    assert result.stdout.strip() == summary(pushed=2, batches=1, skipped=2, version=1)
    assert on_server() == {
        "MEMORY.md": "- [Real DB](feedback_db.md)\n",
        "feedback_db.md": "clean\n",
    }
    assert (
        "reference_ci.md: not sent: GitHub personal access token (github-pat) on line 6"
        in result.stderr
    )
    assert (
        "project_deploy.md: not sent: Mailchimp Access Key (detect-secrets:Mailchimp Access Key) "
        "on line 6" in result.stderr
    )
    output = result.stdout + result.stderr
    assert GITHUB_TOKEN not in output and mailchimp not in output
    assert all("reference_ci.md" not in p["keys"] for p in puts)  # never left the machine
    assert [p["status"] for p in puts] == [422, 200]


def test_a_file_named_after_a_token_is_skipped_before_it_is_sent(laptop, puts):
    key = f"reference_{GITHUB_TOKEN}.md"
    write(laptop, key, topic("CI", "CI access", "reference", body="The runner.\n"))
    write(laptop, "feedback_db.md", "clean\n")

    result = team_sync(laptop, status=1)

    assert f"{key}: not sent: GitHub personal access token (github-pat) in its name" in (
        result.stderr
    )
    assert on_server() == {"feedback_db.md": "clean\n"}
    assert all(key not in p["keys"] for p in puts)


def test_a_key_deleted_in_memhub_is_not_uploaded_again(laptop, alice, alice_api_delete, bob):
    seed(laptop, bob)
    alice_api_delete("feedback_db.md")

    result = team_sync(laptop)

    assert result.stdout.strip() == summary(version=2)
    assert "feedback_db.md" not in on_server()
    assert (team_dir(laptop) / "feedback_db.md").exists()  # this client cannot delete


def test_an_edit_of_a_key_deleted_in_memhub_is_held_there_for_review(
    laptop, desktop, bob, alice_api_delete
):
    seed(laptop, bob)
    team_sync(desktop)
    alice_api_delete("feedback_db.md")
    write(desktop, "feedback_db.md", "bob's late edit\n")

    result = team_sync(desktop, status=1)  # a file held: exit status 1

    assert result.stdout.strip() == summary(batches=1, version=2)  # sent, not written
    assert "feedback_db.md: deleted in memhub; your copy is held there for review" in (
        result.stderr
    )
    assert "feedback_db.md" not in on_server()
    conflict = TeamConflict.objects.get(key="feedback_db.md")
    assert (conflict.kind, conflict.theirs) == ("resurrect", "bob's late edit\n")
    assert team_sync(desktop).stderr == ""  # held once, not re-sent on every run


def test_a_member_only_may_write(laptop, desktop, bob):
    seed(laptop, bob)
    Project.objects.get(key=SLUG).members.remove(bob)
    write(desktop, "feedback_db.md", "bob's edit\n")

    result = team_sync(desktop, status=None)

    assert result.returncode == 5  # the server refused
    assert result.stderr == (
        "memhub-agent: memhub has no project acme/widgets that you can reach: if it is there "
        "under another name, staff can give it this repo slug on its project page; if you are "
        "not one of its members, staff can add you.\n"
    )
    assert on_server()["feedback_db.md"] != "bob's edit\n"


@pytest.fixture
def alice_api_delete(server):
    def delete(key: str) -> None:
        client = Client(server.url, server.token, backoff=NO_RETRY)
        client.request("DELETE", f"/api/v1/stores/{team_store().pk}/files/{key}")

    return delete


# --- pull safety ---------------------------------------------------------------------------------


def test_a_pull_skips_oversized_and_unsafe_entries(laptop, bob, tmp_path):
    seed(laptop, bob)
    root = Path(team_store().path)
    (root / "huge.md").write_text("z" * 250_001)  # written behind the protocol's back
    (root / "bad\\name.md").write_text("backslash\n")
    (root / "fine.md").write_text("fine\n")

    result = team_sync(laptop, status=1)  # entries skipped: exit status 1

    assert (
        "huge.md: 250,001 bytes, over the 250,000-byte limit (the server's copy)" in result.stderr
    )
    assert "unsafe memory key 'bad\\\\name.md': the key contains a backslash" in result.stderr
    assert files(team_dir(laptop))["fine.md"] == "fine\n"
    assert not (team_dir(laptop) / "huge.md").exists()
    assert not list(team_dir(laptop).glob("bad*"))


class _CannedServer(Client):
    """A server that answers every GET with one canned body (for keys no real server sends)."""

    def __init__(self, answer: dict) -> None:
        super().__init__("http://memhub.invalid", "mh_test", backoff=NO_RETRY)
        self.answer = answer

    def request(self, method, path, body=None, *, headers=None):
        assert method == "GET"
        return self.answer


@pytest.mark.parametrize(
    "key", ["../evil.md", "team/../../evil.md", "/tmp/evil.md", "%2e%2e%2fevil.md", "evil.sh"]
)
def test_a_pull_validates_every_key(tmp_path, key):
    team = tmp_path / "memory" / "team"
    text = "evil\n"
    answer = {
        "checksum": "sha256:0",
        "version": 1,
        "content": {"entries": {key: text, "ok.md": "ok\n"}, "entryChecksums": {}},
    }
    sync = TeamSync(_CannedServer(answer), SLUG, team, tmp_path / "state")
    report = TeamReport(SLUG)

    sync.pull(report)

    assert report.pulled == ["ok.md"]
    assert len(report.skipped) == 1 and report.skipped[0].endswith("; skipped")
    assert report.errors == []
    assert not [p for p in tmp_path.rglob("evil*")]


def test_without_a_repo_slug_it_says_what_is_missing(tmp_path, server):
    home = tmp_path / "home"
    machine = Machine(home, git_checkout(home / "src" / "scratch", remote=None))
    machine.login(server)

    result = machine.run("team", "sync")

    assert result.returncode == 2  # usage: cannot be done here
    assert "owner/repo" in result.stderr


# --- watch mode -----------------------------------------------------------------------------------


class Watcher:
    """`team sync --watch` in the background; its stdout lines arrive on a queue."""

    def __init__(self, machine: Machine, *args: str) -> None:
        self.process = subprocess.Popen(
            [str(AGENT), "team", "sync", "--watch", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=machine.env,
            cwd=machine.checkout,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.strip())

    def next_line(self, timeout: float = 20) -> str:
        return self.lines.get(timeout=timeout)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def watch():
    started: list[Watcher] = []

    def start(machine: Machine, *args: str) -> Watcher:
        watcher = Watcher(machine, *args)
        started.append(watcher)
        return watcher

    yield start
    for watcher in started:
        if watcher.process.poll() is None:
            watcher.process.kill()
            watcher.process.wait()
        for stream in (watcher.process.stdout, watcher.process.stderr):
            stream.close()


def wait_for(condition, timeout: float) -> float:
    """Poll until `condition()` holds; the time it took (fails after `timeout`)."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, "timed out"
        time.sleep(0.05)
    return time.monotonic()


def test_watch_pushes_two_seconds_after_the_last_change(laptop, bob, puts, watch):
    seed(laptop, bob)
    puts.clear()
    watcher = watch(laptop, "--interval", "300")
    assert watcher.next_line() == summary(version=1)

    write(laptop, "reference_ci.md", "first draft\n")
    time.sleep(1.0)
    write(laptop, "reference_ci.md", "second draft\n")
    last_change = time.monotonic()
    write(laptop, "reference_docs.md", "docs\n")
    arrived = wait_for(lambda: on_server().get("reference_docs.md") == "docs\n", timeout=15)

    assert 1.9 <= arrived - last_change <= 6
    assert watcher.next_line() == summary(pushed=2, batches=1, version=2)
    assert on_server()["reference_ci.md"] == "second draft\n"
    assert [p["keys"] for p in puts] == [["reference_ci.md", "reference_docs.md"]]
    assert watcher.stop() == 0


def test_watch_pulls_periodically(laptop, bob, watch):
    seed(laptop, bob)
    watcher = watch(laptop, "--interval", "1")
    assert watcher.next_line() == summary(version=1)

    do_put_files(team_store(), bob, {"feedback_db.md": "bob changed it\n"})
    target = team_dir(laptop) / "feedback_db.md"
    wait_for(lambda: target.read_text() == "bob changed it\n", timeout=10)

    assert watcher.next_line() == summary(pulled=1, version=2)
    version = server_version()
    time.sleep(3)  # its own write is not a local change to push back; quiet runs print nothing
    assert server_version() == version
    assert watcher.lines.empty()
    assert watcher.stop() == 0


def test_the_team_client_never_imports_django():
    code = (
        "import sys\n"
        "import memapp.client.cli, memapp.client.team, memapp.client.team_commands\n"
        "memapp.client.cli._parser()\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "assert not roots & {'django', 'rest_framework'}, sorted(roots)\n"
    )
    result = subprocess.run(
        [AGENT.parent / "python", "-c", code], capture_output=True, text=True, env={}
    )

    assert result.returncode == 0, result.stderr


# --- a project memhub cannot find ----------------------------------------------------------------

NO_PROJECT = (
    f"memhub-agent: memhub has no project {SLUG} that you can reach: if it is there under "
    "another name, staff can give it this repo slug on its project page; if you are not one "
    "of its members, staff can add you.\n"
)


@pytest.mark.parametrize("local_files", [False, True])
def test_a_project_memhub_cannot_find_is_said_in_one_sentence_and_exits_non_zero(
    desktop, bob, local_files
):
    """The project is on memhub under its directory name only: bob's agent is told so (never
    an empty "pulled 0, pushed 0" that looks like success), and nothing is created."""
    project = Project.objects.create(key="-home-alice-src-widgets")
    project.members.add(bob)
    if local_files:
        write(desktop, "feedback_db.md", "bob's note\n")

    result = team_sync(desktop, status=5)

    assert result.stdout == "" and result.stderr == NO_PROJECT
    private = desktop.run("sync")
    assert private.returncode == 5 and private.stderr == NO_PROJECT
    assert list(Project.objects.values_list("key", flat=True)) == ["-home-alice-src-widgets"]
    assert not Store.objects.exists()
