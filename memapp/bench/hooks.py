"""Benchmarks of the Claude Code hooks (``python -m memapp.bench --hooks``): what a person waits
for on every prompt of an agent that uses memhub.

- :func:`bench_start_up`: each hook run as Claude Code runs it (a new process, its JSON on
  stdin) against a stand-in server that answers at once, beside a bare ``python -c pass``:
  the difference is the hook's own start-up and work, ≤ 100 ms.
- :func:`bench_model_budget`: the HTTP server serving the corpus as a private store, with the model
  selector on a fake Messages API that answers in 400 ms (``tests/api/fake_anthropic.py``, so
  this section runs from a checkout). ``user-prompt-submit`` with its default 0.7 s budget for
  ``--hook-prompts`` different questions, each asked twice (new sessions): how often the
  model's picks arrive in time (the fake always picks one memory no question matches, so its
  presence in the hook's output tells), how often the hook says anything at all, and its wall
  time. ``--hook-command`` measures another build of the client the same way (e.g. an older
  checkout's, to compare).
- :func:`bench_warm_workers`: ``manage.py serve --workers 2 --no-background``; the first prompt
  request to each worker (two at once, as soon as the port accepts connections) beside later
  ones: ≤ 200 ms, well inside a hook's budget.
- :func:`bench_resumed_session_start`: SessionStart with ``source: resume`` against the HTTP server,
  for a session whose summary memhub keeps (the offline summary of a 5,000-entry session): the
  whole hook, summary handed over, within the hook's 0.7 s budget.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from memapp.bench.common import PROJECT_ROOT, Corpus, Row

__all__ = ["LEGEND", "run"]

START_UP_LIMIT = 0.100
# Claude Code's prompt-time hook runs before every prompt: issue 29 asks ≤ 40 ms over bare
# Python, from the 52–60 ms it measured (the figure it replaced, printed beside the new one).
PROMPT_HOOK_LIMIT = 0.040
PROMPT_HOOK_WAS = "was 52–60 ms (issue 29)"
FIRST_REQUEST_LIMIT = 0.200
MODEL_DELAY = 0.4
MARKER = "zz_bench_marker.md"
AGENT = Path(sys.executable).parent / "memhub-agent"

LEGEND = """\
hooks (--hooks): wall times of real hook processes as Claude Code starts them (JSON on stdin,
default 0.7 s budget). start-up = the hook's median minus a bare `python -c pass`'s, against a
stand-in server that answers at once (targets: Claude Code's prompt hook ≤ 40 ms, issue 29; the
others ≤ 100 ms, issues 16 and 27); beside it the CPU time (user + system) the hook spends over
the bare interpreter's, steadier than wall time on a shared machine. "model within the budget": the
HTTP server with the model selector on a fake Messages API answering in 400 ms; "in time" counts
prompts whose hook output holds the model's pick, "answered" those with any memory. warm workers:
the first prompt request to each of 2 HTTP server workers right after `manage.py serve` starts,
beside the median of later ones (target ≤ 200 ms). resumed session: SessionStart with `source:
resume` against the HTTP server, the session's summary (offline, of 5,000 entries) handed over;
target: within the hook's budget (0.7 s)."""


# -- processes ----------------------------------------------------------------------------------


def _wall(command: Sequence[str], stdin: str = "", env: dict[str, str] | None = None, cwd=None):
    start = time.perf_counter()
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=30
    )
    return time.perf_counter() - start, done


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _hook_env(home: Path, url: str, token: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "MEMHUB_URL": url,
        "MEMHUB_TOKEN": token,
        "LANG": "C.UTF-8",
    }


def _payload(event: str, cwd: Path, home: Path, session: str, prompt: str = "") -> str:
    common = {"session_id": session, "transcript_path": str(home / "t.jsonl"), "cwd": str(cwd)}
    if event == "session-start":
        return json.dumps({**common, "hook_event_name": "SessionStart", "source": "startup"})
    if event == "post-tool-use":
        read = {"file_path": str(home / ".claude" / "agent-memory" / "bench" / "note.md")}
        return json.dumps(
            {**common, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": read}
        )
    return json.dumps({**common, "hook_event_name": "UserPromptSubmit", "prompt": prompt})


# -- start-up -----------------------------------------------------------------------------------

_STAND_IN_ANSWERS = {
    "/api/v1/session-start": {
        "store": None,
        "checksums": {},
        "files": {},
        "partial": False,
        "team_index": "",
        "waiting": [],
        "notice": "",
    },
    "/api/v1/recall": {"memories": [], "rendered": "", "selector": "offline"},
    "/api/v1/recall/surfaced": {"added": 1},
}


@contextlib.contextmanager
def _stand_in_server() -> Iterator[str]:
    """A server that answers every hook request at once, so the hook's own time is measured."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches to)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps(_STAND_IN_ANSWERS.get(self.path, {})).encode()
            # A hook whose budget ran out (a loaded machine) has hung up: nothing to answer.
            with contextlib.suppress(ConnectionError):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def bench_start_up(size: int, runs: int, hook: Sequence[str]) -> list[Row]:
    """Median wall time of each hook event over a bare interpreter's."""
    runs = max(runs, 10)
    with (
        tempfile.TemporaryDirectory(prefix="memhub-bench-hooks-") as tmp,
        _stand_in_server() as url,
    ):
        home = Path(tmp)
        note = home / ".claude" / "agent-memory" / "bench" / "note.md"
        note.parent.mkdir(parents=True)
        note.write_text("---\nname: Note\ndescription: A note\n---\nA note.\n")
        stamp = time.time() - 10 * 86_400
        os.utime(note, (stamp, stamp))
        env = _hook_env(home, url, "mh_bench")
        # Claude Code's hooks, and the prompt-time hook of Gemini CLI and of Codex CLI (the
        # same payload fields; docs/design.md §28).
        events = [
            "user-prompt-submit",
            "session-start",
            "post-tool-use",
            "gemini-cli before-agent",
            "codex user-prompt-submit",
        ]
        samples: dict[str, list[float]] = {name: [] for name in ["bare", *events]}
        cpu: dict[str, list[float]] = {name: [] for name in ["bare", *events]}
        for run in range(runs):
            before = _children_cpu()
            samples["bare"].append(_wall([sys.executable, "-c", "pass"], env=env)[0])
            cpu["bare"].append(_children_cpu() - before)
            for event in events:
                agent, name = event.split() if " " in event else ("claude-code", event)
                kind = "user-prompt-submit" if name == "before-agent" else name
                stdin = _payload(kind, home, home, f"s-{run}", "how do we run the tests?")
                before = _children_cpu()
                elapsed, done = _wall([*hook, "hook", agent, name], stdin, env, home)
                cpu[event].append(_children_cpu() - before)
                if done.returncode != 0:
                    raise RuntimeError(f"hook {event} exited {done.returncode}: {done.stderr}")
                samples[event].append(elapsed)
    bare = statistics.median(samples["bare"])
    bare_cpu = statistics.median(cpu["bare"])
    rows = []
    for event in events:
        median = statistics.median(samples[event])
        more_cpu = statistics.median(cpu[event]) - bare_cpu
        note = (
            f"hook {median * 1e3:.0f} ms, python -c pass {bare * 1e3:.0f} ms; "
            f"CPU +{more_cpu * 1e3:.0f} ms over python's {bare_cpu * 1e3:.0f} ms"
        )
        prompt = event == "user-prompt-submit"
        rows.append(
            Row(
                size,
                f"hook {event}: start-up over python -c pass",
                median - bare,
                limit=PROMPT_HOOK_LIMIT if prompt else START_UP_LIMIT,
                note=f"{note}; {PROMPT_HOOK_WAS}" if prompt else note,
            )
        )
    return rows


# -- the model within the hook's budget ---------------------------------------------------------


def _git_checkout(path: Path, slug: str) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    remote = f"git@github.com:{slug}.git"
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def _fake_messages_api():
    try:
        from tests.api.fake_anthropic import FakeAnthropic
    except ImportError as exc:
        raise RuntimeError(
            "--hooks needs the fake Messages API of the test suite: run it from a checkout"
        ) from exc
    return FakeAnthropic()


def bench_model_budget(corpus: Corpus, runs: int, hook: Sequence[str], prompts: int) -> list[Row]:
    from memapp.bench import web
    from memapp.memdir.paths import memory_dir_for
    from memapp.stores.mirror import rescan_store

    (corpus.root / MARKER).write_text(
        "---\nname: Bench marker\ndescription: Picked by the fake model, by nothing else\n"
        "type: reference\n---\nOnly the model picks this.\n"
    )
    store = web.web_store(corpus)
    rescan_store(store.store)
    questions = [
        body["query"]
        for body in web.recall_payloads(store.project_key, count=prompts * 2)
        if not web.is_unrelated(body)
    ][:prompts]
    with (
        tempfile.TemporaryDirectory(prefix="memhub-bench-hooks-") as tmp,
        _fake_messages_api() as fake,
    ):
        home = Path(tmp)
        checkout = _git_checkout(home / "src" / "app", store.project_key)
        memory = memory_dir_for(
            checkout,
            env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
            settings={},
        )
        fake.answer([f"{memory}/{MARKER}"], delay=MODEL_DELAY)
        model_env = {
            "ANTHROPIC_API_KEY": "sk-bench",
            "ANTHROPIC_BASE_URL": fake.url,
            "MEMHUB_RECALL_TIMEOUT": "5",
        }
        before = {name: os.environ.get(name) for name in model_env}
        os.environ.update(model_env)  # the server's, and only for this section
        try:
            with web.run_server() as server:
                env = _hook_env(home, f"http://127.0.0.1:{server.port}", store.token)
                results = {"first ask": [], "asked again": []}
                for ask in results:
                    for i, question in enumerate(questions):
                        stdin = _payload(
                            "user-prompt-submit", checkout, home, f"{ask}-{i}", question
                        )
                        elapsed, done = _wall(
                            [*hook, "hook", "claude-code", "user-prompt-submit"],
                            stdin,
                            env,
                            checkout,
                        )
                        results[ask].append(
                            (elapsed, MARKER in done.stdout, bool(done.stdout.strip()))
                        )
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    rows = []
    for ask, samples in results.items():
        times = sorted(elapsed for elapsed, _, _ in samples)
        in_time = sum(model for _, model, _ in samples)
        answered = sum(said for _, _, said in samples)
        p95 = times[max(0, round(0.95 * len(times)) - 1)]
        rows.append(
            Row(
                corpus.size,
                f"user-prompt-submit, model at {MODEL_DELAY * 1e3:.0f} ms: {ask}",
                statistics.median(times),
                note=f"model's picks in time {in_time}/{len(samples)} "
                f"({in_time / len(samples):.0%}); answered {answered}/{len(samples)}; "
                f"p95 {p95 * 1e3:.0f} ms",
            )
        )
    return rows


# -- warm workers -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until the port accepts a connection: a bare connect, no request that would warm a
    worker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"manage.py serve exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"manage.py serve did not listen on port {port} within {timeout:.0f} s")


def _prompt(port: int, project: str, token: str) -> float:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/prompt",
        data=json.dumps({"project": project}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
    return time.perf_counter() - start


def bench_warm_workers(corpus: Corpus, runs: int) -> list[Row]:
    """The first prompt request to each worker of a freshly started `manage.py serve` (once
    its port accepts and its workers have had a second to fork), and later ones."""
    from django.utils import timezone

    from memapp.bench import web
    from memapp.stores.models import ApiToken

    store = web.web_store(corpus)
    port = _free_port()
    env = {**os.environ, "MEMHUB_BIND": f"127.0.0.1:{port}"}
    command = [sys.executable, str(PROJECT_ROOT / "manage.py"), "serve", "--workers", "2"]
    firsts: list[float] = []
    later: list[float] = []
    for _ in range(max(1, runs // 2)):
        # Its last use just recorded, as in steady use: no first request writes it.
        ApiToken.objects.update(last_used_at=timezone.now())
        process = subprocess.Popen(
            [*command, "--no-background"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _wait_for_port(port, process)
            time.sleep(1.0)
            with ThreadPoolExecutor(2) as pool:  # one request each for the two workers
                firsts += pool.map(lambda _: _prompt(port, store.project_key, store.token), "ab")
            later += [_prompt(port, store.project_key, store.token) for _ in range(10)]
        finally:
            os.killpg(process.pid, 15)
            process.wait(timeout=30)
    return [
        Row(
            corpus.size,
            "first prompt request per worker after serve starts",
            max(firsts),
            floor=statistics.median(later),
            limit=FIRST_REQUEST_LIMIT,
            note=f"{len(firsts)} first requests, median {statistics.median(firsts) * 1e3:.0f} ms;"
            " floor: later requests",
        )
    ]


# -- a resumed session's summary at session start -----------------------------------------------


def bench_resumed_session_start(corpus: Corpus, runs: int, hook: Sequence[str]) -> list[Row]:
    """SessionStart with `source: resume` for a session whose summary memhub keeps (the offline
    summary of a 5,000-entry session, docs/design.md §14.10), against the HTTP server serving the
    corpus: the whole hook, the summary handed over, beside the hook's budget."""
    from memapp.bench import web
    from memapp.bench.summary import SUMMARY_ENTRIES, coding_transcript, summarize
    from memapp.client.hooks import HOOK_BUDGET
    from memapp.lifecycle.models import Session, SessionSummary
    from memapp.memdir.paths import memory_dir_for

    store = web.web_store(corpus)
    text = summarize(coding_transcript(SUMMARY_ENTRIES))
    with tempfile.TemporaryDirectory(prefix="memhub-bench-hooks-") as tmp:
        home = Path(tmp)
        checkout = _git_checkout(home / "src" / "app", store.project_key)
        # A resumed session's machine already holds the memory: nothing to pull but changes.
        local = memory_dir_for(
            checkout,
            env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
            settings={},
        )
        shutil.copytree(corpus.root, local)
        session = Session.objects.create(
            owner=store.user,
            project=store.store.project,
            store=store.store,
            session_id="bench-resumed",
            cwd=str(checkout),
        )
        SessionSummary.objects.create(session=session, text=text, selector="offline")
        times, bare, handed = [], [], 0
        with web.run_server(start_timeout=120) as server:
            env = _hook_env(home, f"http://127.0.0.1:{server.port}", store.token)
            payload = json.loads(_payload("session-start", checkout, home, "bench-resumed"))
            stdin = json.dumps({**payload, "source": "resume"})
            for _ in range(max(runs, 5)):
                bare.append(_wall([sys.executable, "-c", "pass"], env=env)[0])
                elapsed, done = _wall(
                    [*hook, "hook", "claude-code", "session-start"], stdin, env, checkout
                )
                times.append(elapsed)
                handed += "Summary of this session so far" in done.stdout
    median = statistics.median(times)
    return [
        Row(
            corpus.size,
            "hook session-start, resumed session with its summary",
            median,
            limit=HOOK_BUDGET,
            note=f"summary handed over {handed}/{len(times)}; {len(text):,}-character summary "
            f"(9,000 handed); max {max(times) * 1e3:.0f} ms; python -c pass "
            f"{statistics.median(bare) * 1e3:.0f} ms",
        )
    ]


# -- the section --------------------------------------------------------------------------------


def run(corpus: Corpus, runs: int, *, prompts: int = 20, hook_command: str = "") -> list[Row]:
    """Every hooks measurement on `corpus` (Django set up on a temporary data dir)."""
    hook = shlex.split(hook_command) if hook_command else [str(AGENT)]
    rows = bench_start_up(corpus.size, runs, hook)
    rows += bench_model_budget(corpus, runs, hook, prompts)
    rows += bench_warm_workers(corpus, runs)
    rows += bench_resumed_session_start(corpus, runs, hook)
    return rows
