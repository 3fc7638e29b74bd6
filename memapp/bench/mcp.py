"""The MCP endpoint (``--mcp``): ``tools/list`` and a ``recall`` call POSTed to ``/mcp/<project>/``
as one 2026-07-28 request each, median server time (Django's test client, no network), and
``memhub-agent mcp`` from its start to its answer to ``initialize`` (relayed to the HTTP server).
Targets (issue 26): each request ≤ 15 ms up to 2,000 files, the relay ready ≤ 300 ms."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memapp.bench.common import Corpus, Row
from memapp.bench.web import _latency_limit, _no_target_note, run_server, web_store

LEGEND = """\
MCP (--mcp): tools/list and tools/call recall POSTed to /mcp/<project>/ (the SDK's stateless
handler behind memhub's token check), one self-contained 2026-07-28 request each, median of
20 × runs requests, server time in-process; target ≤ 15 ms up to 2,000 files. memhub-agent mcp:
from its start to its answer to initialize, relayed to the HTTP server (1 worker), median of 5 ×
runs starts, beside `memhub-agent --version` (Python's start and the client's imports); ≤ 300 ms.
Each beside its figure before (issue 26, load average 8–9)."""

MCP_LIMIT = 0.015
READY_LIMIT = 0.300
BEFORE = {"list": "was 6.2 ms", "recall": "was 19.0 ms", "ready": "was 301 ms"}
VERSION = "2026-07-28"


def _request(method: str, params: dict, name: str = "") -> tuple[str, dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    if name:
        headers["Mcp-Name"] = name
    return json.dumps(body), headers


def bench_mcp(corpus: Corpus, runs: int) -> list[Row]:
    from django.test import Client

    from memapp.stores.recall_stats import flush_recall_counts

    web = web_store(corpus)
    client = Client(
        HTTP_HOST="127.0.0.1",
        HTTP_AUTHORIZATION=f"Bearer {web.token}",
        HTTP_ACCEPT="application/json, text/event-stream",
    )
    url = f"/mcp/{web.project_key}/"

    def post(body: str, headers: dict[str, str]) -> float:
        start = time.perf_counter()
        response = client.post(url, body, content_type="application/json", headers=headers)
        elapsed = time.perf_counter() - start
        answer = response.json() if response.status_code == 200 else {}
        if "result" not in answer or answer["result"].get("isError"):
            raise AssertionError(f"{url} answered {response.status_code}: {response.content!r}")
        return elapsed

    listing = _request("tools/list", {})
    recalls = [
        _request("tools/call", {"name": "recall", "arguments": {"query": query}}, "recall")
        for query in ("how do we deploy", "database migrations", "flaky tests in CI")
    ]
    post(*recalls[0])  # builds the store's recall index
    count = 20 * max(runs, 1)
    listed = sorted(post(*listing) for _ in range(count))[count // 2]
    recalled = sorted(post(*recalls[i % len(recalls)]) for i in range(count))[count // 2]
    flush_recall_counts()  # now, while the benchmark's database exists
    no_target = _no_target_note(corpus.size)
    limit = _latency_limit(corpus.size, MCP_LIMIT)
    return [
        Row(
            corpus.size,
            "MCP tools/list POST /mcp/<project>/",
            listed,
            limit=limit,
            note=f"{BEFORE['list']} {no_target}".strip(),
        ),
        Row(
            corpus.size,
            "MCP tools/call recall",
            recalled,
            limit=limit,
            note=f"{BEFORE['recall']} {no_target}".strip(),
        ),
        bench_stdio_ready(corpus, runs),
    ]


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def bench_stdio_ready(corpus: Corpus, runs: int) -> Row:
    """`memhub-agent mcp` started, sent `initialize`, and timed until its answer is read."""
    web = web_store(corpus)
    agent = str(Path(sys.executable).with_name("memhub-agent"))
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "memhub-bench", "version": "1"},
        },
    }
    with tempfile.TemporaryDirectory() as home, run_server(1, start_timeout=120) as server:
        env = {
            **os.environ,
            "HOME": home,
            "XDG_CONFIG_HOME": home,
            "MEMHUB_URL": f"http://127.0.0.1:{server.port}",
            "MEMHUB_TOKEN": web.token,
        }

        def ready() -> float:
            start = time.perf_counter()
            process = subprocess.Popen(
                [agent, "mcp", "--cwd", str(corpus.root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                text=True,
            )
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            answer = process.stdout.readline()
            elapsed = time.perf_counter() - start
            process.stdin.close()
            process.wait(timeout=30)
            if "result" not in json.loads(answer or "{}"):
                raise AssertionError(f"memhub-agent mcp answered {answer!r}")
            return elapsed

        def version() -> float:
            start = time.perf_counter()
            subprocess.run([agent, "--version"], env=env, capture_output=True, check=True)
            return time.perf_counter() - start

        ready()  # the worker's first request
        count = 5 * max(runs, 1)
        started = _median([ready() for _ in range(count)])
        bare = _median([version() for _ in range(count)])
    return Row(
        corpus.size,
        "memhub-agent mcp: start to first answer",
        started,
        limit=READY_LIMIT,
        note=f"{BEFORE['ready']}; memhub-agent --version {bare * 1e3:.0f} ms",
    )
