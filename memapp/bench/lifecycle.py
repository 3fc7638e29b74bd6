"""Benchmarks of the memory lifecycle (docs/design.md §14): the Stop hook, ingest, search.

- Stop hook: the real `memhub-agent hook claude-code stop` (a fresh process, as Claude Code
  starts it) on a 5,000-entry transcript whose earlier entries were uploaded by the previous
  hook, after one more turn was appended; against the HTTP server on loopback. Its floor is the
  Python interpreter's own start-up (`python -c pass`).
- Ingest: the server's time for one upload of 1,000 entries (the API view in process: parsing,
  redaction, storing, indexing).
- Search: past-context search over 1,000 sessions of 200 messages (200,000 entries), two-word
  queries, on the benchmark's SQLite database.
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memapp.bench.common import Row

__all__ = ["LEGEND", "run"]

HOOK_LIMIT = 0.060  # issue 29, from 150 ms (issue 13)
HOOK_WAS = "was 102 ms (issue 29)"
INGEST_LIMIT = 1.0
SEARCH_LIMIT = 0.050
HOOK_ENTRIES = 5_000
PROJECT = "bench/app"
INGEST_ENTRIES = 1_000

LEGEND = """\
lifecycle: stop hook = wall time of the real `memhub-agent hook claude-code stop` process on a
5,000-entry transcript after one new turn (floor: `python -c pass`), against the HTTP server on
loopback; ingest = server time of POST /api/v1/sessions/<id>/entries with 1,000 entries (in
process); search = past-context search over 1,000 sessions / 200,000 messages (two-word queries).
Targets: stop hook p50 ≤ 60 ms (issue 29), ingest ≤ 1 s, search p50 ≤ 50 ms (issue 13); the
stop hook's CPU time (user + system) is beside it, steadier than wall time on a shared machine."""

_WORDS = [
    "deploy", "migration", "database", "fixture", "cache", "retry", "timeout", "pipeline",
    "release", "staging", "billing", "invoice", "schema", "index", "query", "worker", "queue",
    "token", "rotation", "secret", "vault", "config", "flag", "rollout", "canary", "metric",
    "alert", "dashboard", "latency", "error", "budget", "review", "branch", "merge", "rebase",
    "commit", "test", "integration", "unit", "mock", "snapshot", "build", "docker", "image",
    "cluster", "node", "pod", "service", "gateway", "auth", "session", "cookie", "header",
    "payload", "webhook", "callback", "cron", "backup", "restore", "replica", "shard", "lock",
]  # fmt: skip


def _entry(session_id: str, n: int, text: str, kind: str, clock: datetime) -> dict:
    role = "user" if kind == "user" else "assistant"
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/bench/src/app",
        "sessionId": session_id,
        "version": "2.1.328",
        "entrypoint": "cli",
        "type": kind,
        "uuid": str(uuid.UUID(int=n + 1)),
        "timestamp": (clock + timedelta(seconds=n)).isoformat().replace("+00:00", "Z"),
        "message": {"role": role, "content": content},
    }


def _sentence(rng: random.Random, words: int = 18) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _transcript(session_id: str, count: int, start: int = 0) -> list[dict]:
    rng = random.Random(start)
    clock = datetime(2026, 3, 5, 9, 0, tzinfo=UTC)
    kinds = ("user", "assistant")
    return [_entry(session_id, n, _sentence(rng), kinds[n % 2], clock) for n in range(start, count)]


def _write(path: Path, entries: list[dict], mode: str = "w") -> None:
    with path.open(mode, encoding="utf-8") as handle:
        handle.write("".join(json.dumps(e) + "\n" for e in entries))


def _wall(command: list[str], **kwargs) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - started


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench_stop_hook(runs: int, user, token: str) -> list[Row]:
    from memapp.bench.web import run_server
    from memapp.lifecycle.models import Session

    agent = str(Path(sys.executable).parent / "memhub-agent")
    floor = statistics.median(_wall([sys.executable, "-c", "pass"]) for _ in range(runs))
    times, cpu = [], []
    with run_server(workers=1) as server, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        checkout = home / "src" / "app"
        checkout.mkdir(parents=True)
        # A checkout of the benchmark's project (run() created its store): a folder memhub
        # does not know is no project a hook may upload to (a 404, nothing stored).
        subprocess.run(["git", "init", "-q", str(checkout)], check=True)
        remote = f"git@github.com:{PROJECT}.git"
        subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", remote], check=True)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "MEMHUB_URL": f"http://127.0.0.1:{server.port}",
            "MEMHUB_TOKEN": token,
        }
        session_id = str(uuid.uuid4())
        path = home / ".claude" / "projects" / "-src-app" / f"{session_id}.jsonl"
        path.parent.mkdir(parents=True)
        entries = _transcript(session_id, HOOK_ENTRIES)
        _write(path, entries)
        payload = json.dumps(
            {
                "session_id": session_id,
                "transcript_path": str(path),
                "cwd": str(checkout),
                "hook_event_name": "Stop",
                "stop_hook_active": False,
            }
        )
        command = [agent, "hook", "claude-code", "stop"]
        # Not measured: the earlier turns, uploaded by a hook with time enough for a first
        # batch even on a loaded machine (with 0.7 s it may never finish one, and never
        # hand the rest to its detached process).
        setup = {**env, "MEMHUB_HOOK_TIMEOUT": "30"}
        subprocess.run(command, input=payload, text=True, env=setup, cwd=checkout, check=True)
        deadline = time.monotonic() + 300  # the backlog goes on in a detached process
        while time.monotonic() < deadline:
            stored = Session.objects.filter(session_id=session_id).first()
            if stored is not None and stored.entry_count >= HOOK_ENTRIES:
                break
            time.sleep(0.5)
        count = HOOK_ENTRIES
        for _ in range(runs):
            _write(path, _transcript(session_id, count + 2, start=count), mode="a")
            count += 2
            before = _children_cpu()
            times.append(_wall(command, input=payload, text=True, env=env, cwd=checkout))
            cpu.append(_children_cpu() - before)
    stored = Session.objects.filter(session_id=session_id).first()
    uploaded = stored.entry_count if stored is not None else 0
    note = (
        f"{uploaded:,} entries stored; CPU {statistics.median(cpu) * 1000:.0f} ms; "
        f"python -c pass {floor * 1000:.0f} ms; {HOOK_WAS}"
    )
    return [
        Row(
            HOOK_ENTRIES,
            "stop hook, one new turn (p50 wall)",
            statistics.median(times),
            floor=floor,
            limit=HOOK_LIMIT,
            note=note,
            errors=0 if uploaded >= HOOK_ENTRIES else 1,  # not the turn after a long session
        )
    ]


def bench_ingest(runs: int, user, token: str) -> list[Row]:
    from rest_framework.test import APIClient

    client = APIClient(HTTP_HOST="127.0.0.1")  # DEBUG is off: a host the settings allow
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    times = []
    for _ in range(runs):
        session_id = str(uuid.uuid4())
        body = {"project": PROJECT, "entries": _transcript(session_id, INGEST_ENTRIES)}
        started = time.perf_counter()
        response = client.post(f"/api/v1/sessions/{session_id}/entries", body, format="json")
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"ingest failed: {response.status_code} {response.content[:300]!r}")
    return [
        Row(
            INGEST_ENTRIES,
            "ingest of 1,000 entries (server)",
            statistics.median(times),
            limit=INGEST_LIMIT,
        )  # fmt: skip
    ]


def _fill_sessions(user, sessions: int, per_session: int) -> None:
    from memapp.lifecycle.models import Session, TranscriptEntry
    from memapp.stores.projects import resolve_store

    store = resolve_store(user, PROJECT, "private")
    rng = random.Random(7)
    clock = datetime(2026, 1, 1, tzinfo=UTC)
    for s in range(sessions):
        session = Session.objects.create(
            owner=user,
            project=store.project,
            store=store,
            session_id=f"bench-{s}",
            title=_sentence(rng, 6),
            entry_count=per_session,
        )
        rows = []
        for n in range(per_session):
            text = _sentence(rng)
            rows.append(
                TranscriptEntry(
                    session=session,
                    seq=n + 1,
                    key=f"k{n}",
                    type="user" if n % 2 == 0 else "assistant",
                    timestamp=clock + timedelta(minutes=s * 300 + n),
                    prose=text,
                    text=text,
                    is_user_prose=n % 2 == 0,
                    gate_checked=True,
                )
            )
        TranscriptEntry.objects.bulk_create(rows, batch_size=1000)


def bench_search(runs: int, user, sessions: int, per_session: int) -> list[Row]:
    from memapp.lifecycle.past_context import search_past_context

    started = time.perf_counter()
    _fill_sessions(user, sessions, per_session)
    fill = time.perf_counter() - started
    rng = random.Random(11)
    queries = [f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}" for _ in range(max(runs, 20))]
    search_past_context(user, queries[0])  # warm the page cache
    times = []
    for query in queries:
        started = time.perf_counter()
        search_past_context(user, query)
        times.append(time.perf_counter() - started)
    total = sessions * per_session
    return [
        Row(
            total,
            f"search over {sessions:,} sessions (p50)",
            statistics.median(times),
            limit=SEARCH_LIMIT,
            note=f"p90 {sorted(times)[int(len(times) * 0.9)] * 1000:.1f} ms; fill {fill:.0f} s",
        )
    ]


def run(runs: int, sessions: int = 1000, per_session: int = 200) -> list[Row]:
    """Every lifecycle section on a temporary data dir."""
    from memapp.bench.web import django_on_temp_data_dir

    with django_on_temp_data_dir():
        from django.contrib.auth import get_user_model

        from memapp.stores.models import Project
        from memapp.stores.projects import resolve_store
        from memapp.stores.tokens import do_create_api_token

        user = get_user_model().objects.create_user("bench-lifecycle", password=None)
        _row, token = do_create_api_token(user, "bench")
        # Made here: only staff may create a project by naming it (protocol_project_creation).
        Project.objects.create(key=PROJECT, repo_slug=PROJECT, name="app").members.add(user)
        resolve_store(user, PROJECT, "private")
        rows = bench_stop_hook(runs, user, token)
        rows += bench_ingest(runs, user, token)
        rows += bench_search(runs, user, sessions, per_session)
    return rows
