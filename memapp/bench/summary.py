"""Benchmark of the offline session summary (docs/design.md §14.10): memhub's rules over a whole
5,000-entry coding session at once (the worst case: a first summary of a long session, or a
summary after a backlog), from the raw JSONL entries to the Markdown within its limits."""

from __future__ import annotations

import statistics
import time

from memapp.bench.common import Row

__all__ = [
    "LEGEND",
    "SUMMARY_ENTRIES",
    "bench_offline_summary",
    "coding_transcript",
    "summarize",
]

SUMMARY_ENTRIES = 5_000
SUMMARY_LIMIT = 0.200

LEGEND = """\
summary: offline session summary = parse 5,000 transcript entries of a coding session (requests,
replies, Read/Edit/Bash calls with results, some failing), then memhub's rules, the limits
(2,000 tokens a section, 12,000 in all) and the Markdown. Target (issue 24): ≤ 200 ms."""


def _call(call_id: str, name: str, tool_input: dict) -> list[dict]:
    return [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}]


def _result(call_id: str, content: str, failed: bool = False) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": failed}]


def coding_transcript(count: int) -> list[dict]:
    """`count` raw entries of a coding session, in rounds of ten."""
    entries: list[dict] = []

    def add(kind: str, content) -> None:
        n = len(entries)
        entries.append(
            {
                "type": kind,
                "uuid": f"00000000-0000-0000-0000-{n:012d}",
                "sessionId": "bench",
                "timestamp": f"2026-03-05T{9 + n // 3600 % 12:02d}:00:00Z",
                "message": {"role": kind, "content": content},
            }
        )

    n = 0
    while len(entries) < count:
        module = f"module_{n % 40}"
        path = f"/home/bench/src/app/app/{module}.py"
        failed = n % 4 == 0
        add("user", f"Step {n}: make {module} retry its database calls with backoff.")
        add("assistant", [{"type": "text", "text": f"Reading {module} first."}])
        add("assistant", _call(f"r{n}", "Read", {"file_path": path}))
        add("user", _result(f"r{n}", "def f():\n    pass\n" * 80))
        edit = {"file_path": path, "old_string": "pass", "new_string": "return retry(f)"}
        add("assistant", _call(f"e{n}", "Edit", edit))
        add("user", _result(f"e{n}", f"The file {path} has been updated."))
        add("assistant", _call(f"b{n}", "Bash", {"command": f"pytest tests/test_{module}.py -q"}))
        add("user", _result(f"b{n}", "1 failed, 9 passed" if failed else "10 passed", failed))
        outcome = "fail, fixing" if failed else "pass"
        add("assistant", [{"type": "text", "text": f"Step {n} done; the tests {outcome}."}])
        add("system", f"Step {n} checkpoint.")
        n += 1
    return entries[:count]


def summarize(raw: list[dict]) -> str:
    from memapp.memdir.session_summary import OfflineSummary, fit_sections, render_summary
    from memapp.memdir.transcripts import EntryError, parse_entry

    entries = []
    for obj in raw:
        try:
            entries.append(parse_entry(obj))
        except EntryError:
            continue
    rules = OfflineSummary()
    rules.add(entries, cwd="/home/bench/src/app")
    return render_summary(fit_sections(rules.sections()))


def bench_offline_summary(runs: int) -> list[Row]:
    raw = coding_transcript(SUMMARY_ENTRIES)
    times, text = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        text = summarize(raw)
        times.append(time.perf_counter() - started)
    return [
        Row(
            SUMMARY_ENTRIES,
            "offline session summary (parse + rules)",
            statistics.median(times),
            limit=SUMMARY_LIMIT,
            note=f"{len(text):,} characters of summary",
        )
    ]
