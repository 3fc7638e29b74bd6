"""`manage.py serve` as a person runs it: the HTTP server with two workers, the task worker and the
background process, on a fresh data dir and a Claude Code memory base in temp dirs.

What it must do: discover at start; show a project Claude Code starts later by itself; hold a
token to its rate across both workers (the throttle's state is in the shared cache); hold a
login throttle across both (its attempts are rows in the database); stop every process it
started."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import write_memory
from tests.migrated import migrate

ROOT = Path(__file__).resolve().parent.parent
MANAGE = str(ROOT / "manage.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    url: str
    env: dict[str, str]
    process: subprocess.Popen
    base: Path  # the Claude Code memory base it watches
    log: Path | None = None  # what serve and its children printed

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, MANAGE, *args], env=self.env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def token(self) -> str:
        return self.manage("create_api_token", "admin").strip().splitlines()[-1]

    def get(self, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
        """GET `path` (POST `body` as JSON when given) with the token: (status, JSON answer)."""
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")


def private_stores(server: Server, token: str) -> dict[str, int]:
    """Project key → file count of the admin's private stores, as the API lists them."""
    status, body = server.get("/api/v1/stores/", token)
    assert status == 200, body
    return {s["project"]: s["file_count"] for s in body["stores"] if s["kind"] == "private"}


def wait_until(check, seconds: float, server: Server | None = None) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            output = server.log.read_text() if server and server.log else ""
            if server is not None:  # what the server, worker and live mirror logged
                for log in sorted((Path(server.env["MEMHUB_DATA_DIR"]) / "logs").glob("*.log")):
                    output += f"\n--- {log.name}\n{log.read_text(errors='replace')[-4000:]}"
            raise AssertionError(f"not true after {seconds} s; serve printed:\n{output}")
        time.sleep(0.05)
    return time.monotonic() - start


@pytest.fixture(scope="module")
def serve(tmp_path_factory) -> Iterator:
    """Start `manage.py serve --workers 2` with `extra` settings (a data dir and a memory base
    of its own each time); all are stopped after the module's tests."""
    started: list[Server] = []

    def start(**extra: str) -> Server:
        tmp_path = tmp_path_factory.mktemp("serve")
        port = free_port()
        base = tmp_path / "claude"
        write_memory(
            base / "projects" / "-home-admin-app" / "memory",
            "user_role.md",
            "Role",
            "The admin is a backend engineer",
            "user",
        )
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "MEMHUB_DATA_DIR": str(tmp_path / "data"),
            "CLAUDE_CONFIG_DIR": str(base),
            "MEMHUB_BIND": f"127.0.0.1:{port}",
            "MEMHUB_ADMIN_PASSWORD": "correct horse battery staple",
            "MEMHUB_RESCAN_SECONDS": "3600",  # only the watcher can make a late project appear
            **extra,
        }
        server = Server(f"http://127.0.0.1:{port}", env, None, base)  # type: ignore[arg-type]
        migrate(tmp_path / "data")
        server.manage("ensure_admin")
        server.log = tmp_path / "serve.log"
        with server.log.open("w") as log:
            server.process = subprocess.Popen(
                [sys.executable, MANAGE, "serve", "--workers", "2"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(server)
        wait_until(lambda: _answers(server.url), 30)
        return server

    yield start
    for server in started:
        stop_serve(server.process)


def running_in_group(pgid: int) -> list[str]:
    """Live processes of the process group, each `pid ppid stat args` (zombies waiting to be
    reaped are gone already: git, killed in the middle of a team sync, may leave one to an init
    that does not reap it)."""
    listing = subprocess.run(
        ["ps", "-o", "pid=,ppid=,stat=,args=", "-g", str(pgid)], capture_output=True, text=True
    ).stdout
    return [line for line in listing.splitlines() if line.split()[2:3] != ["Z"]]


def stop_serve(process: subprocess.Popen) -> int:
    """Stop a `serve` started in its own session as a person does (SIGTERM), and check that it
    left no process running; its exit status."""
    os.killpg(process.pid, signal.SIGTERM)
    code = process.wait(timeout=30)
    # serve waits for its own children; their children (the HTTP server's workers) may take a moment
    # longer on a loaded machine, but none may stay.
    try:
        wait_until(lambda: not running_in_group(process.pid), 10)
    except AssertionError:
        left = running_in_group(process.pid)
        raise AssertionError(f"serve left processes running: {left}") from None
    return code


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/login/", timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(serve) -> Server:
    """One memhub for the tests that need no settings of their own (each uses its own token;
    the login throttle's test unlocks the admin it locked)."""
    return serve()


def test_serve_discovers_at_start_and_shows_a_project_started_later(server):
    token = server.token()
    wait_until(lambda: private_stores(server, token).get("-home-admin-app") == 1, 30, server)

    later = server.base / "projects" / "-home-admin-later" / "memory"
    write_memory(later, "project_deploy.md", "Deploy", "We deploy on Fridays", "project")
    write_memory(later, "feedback_tests.md", "Tests", "Real databases in tests", "feedback")
    wait_until(lambda: private_stores(server, token).get("-home-admin-later") == 2, 30, server)


def test_a_token_gets_its_rate_across_both_workers(serve):
    """An hour's rate, so the bucket's refill (one every 3 minutes) cannot let a 21st in."""
    server = serve(MEMHUB_API_RATE="20/hour")
    token = server.token()
    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(lambda _: server.get("/api/v1/stores/", token)[0], range(40)))
    assert codes.count(200) == 20 and codes.count(429) == 20


def test_with_a_cache_per_worker_the_rate_would_not_hold(serve):
    """The control for the test above: per-process caches let each worker allow the rate."""
    server = serve(MEMHUB_API_RATE="20/hour", MEMHUB_CACHE_URL="locmem://")
    token = server.token()
    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(lambda _: server.get("/api/v1/stores/", token)[0], range(40)))
    assert codes.count(200) > 20


def test_a_session_budget_holds_across_both_workers(server):
    """20 memories of about 3 KB each match the query; one session asks 8 times at once, spread
    over both workers: it is shown each memory at most once and at most 60 KB in all."""
    memory = server.base / "projects" / "-home-admin-budget" / "memory"
    for i in range(20):
        body = f"Deploy checklist step {i}: check the payments dashboard.\n" * 60
        write_memory(
            memory, f"deploy_{i:02}.md", f"Deploy {i}", "Deploy checklist", "project", body
        )
    token = server.token()
    wait_until(lambda: private_stores(server, token).get("-home-admin-budget") == 20, 30, server)
    ask = {
        "project": "-home-admin-budget",
        "query": "deploy checklist for payments",
        "session_id": "s-1",
    }

    def recall(_):
        status, answer = server.get("/api/v1/recall", token, ask)
        assert status == 200, answer
        return answer["memories"]

    with ThreadPoolExecutor(4) as pool:
        shown = [memory for answer in pool.map(recall, range(8)) for memory in answer]
    paths = [memory["path"] for memory in shown]
    assert len(paths) == len(set(paths))  # never the same memory twice in one session
    used = sum(len(memory["content"].encode()) for memory in shown)
    assert 50_000 < used <= 60 * 1024  # the whole budget is used, and not a byte more


def log_in_over_http(server: Server, username: str, password: str) -> str:
    """Send the login form as a browser does (its CSRF cookie and token): `in` when it logged
    in, `refused` when the password did not match, `wait` when the login is locked."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(server.url + "/login/", timeout=10) as response:
        form = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)[1]
    fields = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    request = urllib.request.Request(
        server.url + "/login/",
        data=urllib.parse.urlencode(fields).encode(),
        headers={"Referer": server.url + "/login/"},
    )
    try:
        with opener.open(request, timeout=10) as response:
            page = response.read().decode()
    except urllib.error.HTTPError as exc:
        assert exc.code == 429, exc.code
        assert "Too many failed logins" in exc.read().decode()
        return "wait"
    return "refused" if "didn't match" in page else "in"


def test_the_login_throttle_holds_across_both_workers(server):
    """Failed logins sent two at a time (so both workers answer) add up to one count: the fifth
    locks the account for every worker, the right password included."""
    password = server.env["MEMHUB_ADMIN_PASSWORD"]
    with ThreadPoolExecutor(2) as pool:
        wrong = list(pool.map(lambda _: log_in_over_http(server, "admin", "nope"), range(4)))
        assert wrong == ["refused"] * 4
        assert log_in_over_http(server, "admin", "nope") == "wait"
        right = list(pool.map(lambda _: log_in_over_http(server, "admin", password), range(6)))
    assert right == ["wait"] * 6
    server.manage("axes_reset")  # what staff run to unlock at once
    assert log_in_over_http(server, "admin", password) == "in"


def http_workers(server: Server) -> set[int]:
    """The HTTP server's worker processes: the children of the one `serve` started."""
    rows = [line.split(None, 3) for line in running_in_group(server.process.pid)]
    live = [(int(pid), int(ppid), args) for pid, ppid, _stat, args in rows]
    master = next(
        pid for pid, ppid, args in live if ppid == server.process.pid and "http_server" in args
    )
    return {pid for pid, ppid, _ in live if ppid == master}


def test_the_task_worker_and_the_background_process_skip_the_checks_serve_ran(server):
    """Each run of the checks imports every URL and view: a second of CPU at their start."""
    rows = [line.split(None, 3) for line in running_in_group(server.process.pid)]
    pids = [pid for pid, ppid, _stat, _args in rows if int(ppid) == server.process.pid]
    # Each whole command line (ps cuts them to its width).
    children = [Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:-1] for pid in pids]
    commands = {args[2]: args[3:] for args in children if args[1] == MANAGE}
    assert set(commands) == {"db_worker", "background"}, children
    assert all("--skip-checks" in options for options in commands.values()), commands


def test_a_worker_that_dies_is_replaced_and_the_site_keeps_answering(server):
    """A worker killed outright (out of memory, a crash) is replaced by a new one."""
    workers = http_workers(server)
    assert len(workers) == 2
    victim = min(workers)
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: len(http_workers(server) - {victim}) == 2, 30, server)
    token = server.token()
    statuses = [server.get("/api/v1/stores/", token)[0] for _ in range(10)]
    assert statuses == [200] * 10
    assert (
        "Respawning worker" in (Path(server.env["MEMHUB_DATA_DIR"]) / "logs/server.log").read_text()
    )


def test_a_token_in_a_requests_path_is_kept_out_of_the_logs(server):
    """The access log keeps each request's path, and Django's log each 4xx answer's: an agent
    naming a file after a token must not leave it there in clear (docs/design.md §10a)."""
    secret = "ghp_" + "Vq7Lm2Xz9Kp4Rt8Wn3Ys6Bd1Fh5Jc0Ge2TqW"
    status, _ = server.get(f"/api/v1/stores/999999/files/{secret}.md", server.token())
    assert status == 404
    logs = Path(server.env["MEMHUB_DATA_DIR"]) / "logs"

    def written() -> str:
        texts = [path.read_text(errors="replace") for path in logs.glob("*.log")]
        return server.log.read_text(errors="replace") + "".join(texts)

    shown = "/api/v1/stores/999999/files/[REDACTED:GitHub personal access token].md"
    wait_until(lambda: written().count(shown) == 2, 10)  # the access log's line, Django's
    assert secret not in written()
