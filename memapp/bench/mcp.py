"""The MCP endpoint (``--mcp``): ``tools/list`` and a ``recall`` call POSTed to ``/mcp/<project>/``
as one 2026-07-28 request each, median server time (Django's test client, no network).
Target (issue 26): each ≤ 15 ms up to 2,000 files."""

from __future__ import annotations

import json
import time

from memapp.bench.common import Corpus, Row
from memapp.bench.web import _latency_limit, _no_target_note, web_store

LEGEND = """\
MCP (--mcp): tools/list and tools/call recall POSTed to /mcp/<project>/ (the SDK's stateless
handler behind memhub's token check), one self-contained 2026-07-28 request each, median of
20 × runs requests, server time in-process; target ≤ 15 ms up to 2,000 files."""

MCP_LIMIT = 0.015
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
    note = _no_target_note(corpus.size)
    limit = _latency_limit(corpus.size, MCP_LIMIT)
    return [
        Row(corpus.size, "MCP tools/list POST /mcp/<project>/", listed, limit=limit, note=note),
        Row(corpus.size, "MCP tools/call recall", recalled, limit=limit, note=note),
    ]
