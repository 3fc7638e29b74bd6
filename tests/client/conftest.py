"""A real memhub server (pytest-django's live_server) and "machines": temp home directories,
each with its own config dirs and a real git checkout of the same project, on which the real
`memhub-agent` console script runs in a subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memapp.memdir.paths import memory_dir_for
from memapp.stores.tokens import do_create_api_token

AGENT = Path(sys.executable).parent / "memhub-agent"
IDLE_START = 0.15  # seconds a `memhub-agent` process takes to start on an idle machine
SLUG = "acme/widgets"
REMOTE = f"git@github.com:{SLUG}.git"


@dataclass
class Server:
    url: str
    token: str


@dataclass
class Machine:
    """One computer of one person: a home, a checkout of the project, a memhub login."""

    home: Path
    checkout: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            "LANG": "C.UTF-8",
            # Hooks get room on a loaded test machine; the tests of the 0.7 s budget itself
            # set it back with `default_budget`.
            "MEMHUB_HOOK_TIMEOUT": "5",
            **self.extra_env,
        }

    @property
    def config_dir(self) -> Path:
        return self.home / ".config" / "memhub"

    @property
    def memory_dir(self) -> Path:
        return memory_dir_for(self.checkout, env=self.env, settings={})

    def run(self, *args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(AGENT), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.checkout,
            timeout=timeout,
        )

    def without_load(self, elapsed: float) -> float:
        """A hook's wall time less what the load of the running suite adds to a
        `memhub-agent` start just now: the second a hook may take is about its own work (the
        hooks benchmark measures it on a quiet machine)."""
        before = time.monotonic()
        self.run("--version")
        return elapsed - max(0.0, time.monotonic() - before - IDLE_START)

    def login(self, server: Server) -> None:
        result = self.run("login", server.url, "--token", "-", stdin=server.token + "\n")
        assert result.returncode == 0, result.stderr

    def sync(self, *args: str, status: int = 0) -> subprocess.CompletedProcess:
        """`memhub-agent sync`, which must exit with `status` (1: conflicts or skipped files)."""
        result = self.run("sync", *args)
        assert result.returncode == status, result.stderr
        return result

    def write(self, key: str, text: str) -> Path:
        path = self.memory_dir / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def read(self, key: str) -> str:
        return (self.memory_dir / key).read_text(encoding="utf-8")

    def files(self) -> dict[str, str]:
        """Every file under the memory dir, by key."""
        root = self.memory_dir
        return {
            path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(root.rglob("*"))
            if path.is_file()
        }

    def default_budget(self) -> None:
        """Hooks get the 0.7 s a real agent gives them (for the tests of that budget)."""
        self.extra_env["MEMHUB_HOOK_TIMEOUT"] = "0.7"

    def hook(self, event: str, payload: dict, timeout: float = 10) -> subprocess.CompletedProcess:
        return self.run("hook", "claude-code", event, stdin=json.dumps(payload), timeout=timeout)


def git_checkout(path: Path, remote: str | None = REMOTE) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def topic(name: str, description: str, type_: str = "feedback", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n{body}"


@pytest.fixture
def data_dir(settings, tmp_path):
    """memhub's stores for remote agents live in a temp data dir, and nothing is discovered."""
    settings.MEMHUB_DATA_DIR = tmp_path / "data"
    settings.MEMHUB_DISCOVER = False
    return settings.MEMHUB_DATA_DIR


@pytest.fixture
def server(live_server, data_dir, alice) -> Server:
    """A real memhub server and an API token of alice's."""
    _, token = do_create_api_token(alice, "laptop")
    return Server(live_server.url, token)


@pytest.fixture
def machine_a(tmp_path) -> Machine:
    home = tmp_path / "a" / "home"
    return Machine(home, git_checkout(home / "src" / "widgets"))


@pytest.fixture
def machine_b(tmp_path) -> Machine:
    """Alice's second machine: the same project, checked out elsewhere."""
    home = tmp_path / "b" / "home"
    return Machine(home, git_checkout(home / "work" / "acme-widgets"))


@pytest.fixture(params=["socket", "urllib"])
def http_route(request, monkeypatch) -> str:
    """Each way a request to a local `http://` server goes (`memapp.client.transport`): on a
    plain socket when no proxy is configured, through urllib when one is (here a proxy that
    `no_proxy` tells urllib to bypass, as a person behind one would have it for local hosts)."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    if request.param == "urllib":
        monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
        monkeypatch.setenv("no_proxy", "*")
    return request.param


@pytest.fixture
def closed_port() -> int:
    """A local port nobody listens on (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_server():
    """A server that accepts connections and then never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(connection)  # read nothing, answer nothing

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


@dataclass
class Recording:
    """A stand-in server: answers every request with an empty JSON object, and keeps them."""

    url: str
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def recording_server():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    recording = Recording("")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            recording.requests.append(f"{self.command} {self.path}")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recording.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield recording
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def slow_proxy():
    """`slow_proxy(url, seconds)`: the server at `url`, but every answer `seconds` late."""
    import urllib.error
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    servers: list[ThreadingHTTPServer] = []

    def start(target: str, seconds: float) -> str:
        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = urllib.request.Request(
                    target + self.path, data=body or None, method=self.command
                )
                for name in ("Authorization", "Content-Type", "Accept"):
                    if self.headers.get(name):
                        request.add_header(name, self.headers[name])
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        status, headers, data = response.status, response.headers, response.read()
                except urllib.error.HTTPError as exc:
                    status, headers, data = exc.code, exc.headers, exc.read()
                time.sleep(seconds)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", headers.get("Content-Type", ""))
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up

            do_GET = do_POST = do_PUT = do_DELETE = _forward

            def log_message(self, *args) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        servers.append(httpd)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()
