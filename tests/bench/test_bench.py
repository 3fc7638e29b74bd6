"""A quick run of the benchmark on a tiny corpus: it works, not how fast it is."""

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memapp.bench import __main__ as bench_command
from memapp.bench import common, core
from memapp.bench import web as bench_web
from memapp.memdir.frontmatter import MEMORY_TYPES
from memapp.memdir.scan import ScanCache, scan_memory_files


def test_the_generated_corpus_looks_like_a_memory_directory(tmp_path):
    corpus = common.generate_corpus(tmp_path, 300, progress=False)

    headers = scan_memory_files(tmp_path, limit=None, cache=ScanCache())
    assert len(headers) == 300
    assert (tmp_path / "MEMORY.md").is_file() and (tmp_path / "team" / "MEMORY.md").is_file()
    assert {h.type for h in headers} == {*MEMORY_TYPES, None}  # some memories are untyped
    assert {h.type_form for h in headers} == {"top", "metadata", None}
    assert list(tmp_path.glob("logs/*/*/*.md"))  # daily logs beside them, which scans skip
    assert not any(h.path.startswith("logs/") for h in headers)
    assert any(h.path.startswith("team/web/") for h in headers)
    assert all(h.problem is None for h in headers)
    assert len(corpus.index_text.splitlines()) == sum(h.name is not None for h in headers)


def test_the_floors_see_the_same_files(tmp_path):
    common.generate_corpus(tmp_path, 50, progress=False)
    assert core.floor_cold_scan(str(tmp_path)) == 50
    assert core.floor_stat_walk(str(tmp_path)) == 52  # and both MEMORY.md


def test_a_worker_prints_its_time_as_json(tmp_path, capsys):
    common.generate_corpus(tmp_path, 10, progress=False)
    assert bench_command.main(["--worker", "scan", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["files"] == 10 and result["seconds"] > 0


def test_it_prints_a_table_with_every_row(capsys):
    assert bench_command.main(["--sizes", "20", "--runs", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    for measure in (
        "cold scan (fresh process)",
        "warm rescan (unchanged)",
        "format_manifest (20 headers)",
        "truncate_index (",
    ):
        assert measure in out
    assert out.count("≤ 1.3×") >= 2 and "was 1.85×" in out  # cold and warm; warm's old figure
    assert sum(line.lstrip().startswith("20  ") for line in out.splitlines()) == 4


def test_the_offline_session_summary_of_5000_entries_is_measured_against_200_ms(capsys):
    assert bench_command.main(["--sizes", "20", "--runs", "1", "--quiet", "--summary"]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("5,000  offline session")]
    assert "≤ 200 ms" in row
    assert "issue 24" in out


def test_a_missing_section_dependency_is_a_skipped_row(tmp_path, monkeypatch):
    corpus = common.generate_corpus(tmp_path, 5, progress=False)
    monkeypatch.setitem(sys.modules, "memapp.memdir.index", None)
    (row,) = core.bench_index(corpus, 1)
    assert row.seconds is None and row.note.startswith("skipped:")
    assert "skipped:" in common.format_table([row])


# -- the web sections (memapp.bench.web) -------------------------------------------------------


def test_absolute_targets_and_rates_are_met_or_missed():
    assert common.Row(1, "page", 0.100, limit=0.150).met is True
    assert common.Row(1, "page", 0.200, limit=0.150).met is False
    assert common.Row(1, "load", None, rate=200.0, min_rate=150.0).met is True
    assert common.Row(1, "load", None, rate=100.0, min_rate=150.0).met is False
    assert common.Row(1, "load", None, rate=200.0, min_rate=150.0, errors=1).met is False
    assert common.Row(1, "info", 0.001).met is None


def test_the_table_shows_absolute_targets_and_rates():
    table = common.format_table(
        [
            common.Row(2000, "store page", 0.0161, limit=0.150, note="7 queries"),
            common.Row(2000, "recall throughput", None, rate=116.4, min_rate=150.0),
            common.Row(2000, "rescan", 0.0559, 0.0063, note="(target at ≥ 20,000 files)"),
        ]
    )
    assert "16.1 ms" in table and "≤ 150 ms ✓  7 queries" in table
    assert "116/s" in table and "≥ 150/s ✗" in table
    assert "8.87×  (target at ≥ 20,000 files)" in table


def test_recall_payloads_are_varied_engineering_questions():
    paths = ["a.md", "notes/infra/b.md", "team/c.md"]
    payloads = bench_web.recall_payloads("acme/app", paths)

    assert len(payloads) == bench_web.QUERIES
    assert len({p["query"] for p in payloads}) > 150
    assert all(p["project"] == "acme/app" for p in payloads)
    unrelated = [p for p in payloads if bench_web.is_unrelated(p)]
    assert 10 <= len(unrelated) <= 25
    assert sum("recent_tools" in p for p in payloads) > 20
    assert sum("memory_dir" in p for p in payloads) > 50
    surfaced = [p for p in payloads if "already_surfaced" in p]
    assert surfaced
    for payload in surfaced:
        prefix = payload.get("memory_dir", "")
        assert all(s.removeprefix(prefix).lstrip("/") in paths for s in payload["already_surfaced"])
    assert payloads == bench_web.recall_payloads("acme/app", paths)  # the same every run


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert bench_web.percentile(values, 0.5) == 50.0
    assert bench_web.percentile(values, 0.99) == 99.0
    assert bench_web.percentile([3.0], 0.99) == 3.0


@contextlib.contextmanager
def _recall_server(status: Callable[[bytes], int]) -> Iterator[int]:
    """A stand-in for the HTTP server in this process: each POST answered `status(body)` with
    `{}`; yields its port."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(status(body))
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_load_generator_counts_answers_and_errors():
    with _recall_server(lambda body: 500 if b"fail" in body else 200) as port:
        result = bench_web.drive_load(
            port,
            lambda n: b"fail" if n % 4 == 0 else b"ok",
            {"Content-Type": "application/json"},
            seconds=5.0,
            clients=3,
            max_requests=40,
        )
    assert len(result.latencies) == 30 and len(result.errors) == 10
    assert set(result.errors) == {"HTTP 500"}
    assert result.rate > 0


def test_the_load_runs_as_often_as_asked_and_the_median_run_is_shown():
    """`--runs` loads, each its own sessions and its own server CPU; the table shows the
    medians, every run's figure beside them in the order they ran."""
    seen: list[bytes] = []

    def record(body: bytes) -> int:
        seen.append(body)
        return 200

    with _recall_server(record) as port:
        loads = bench_web.timed_loads(
            port,
            os.getpid(),  # the server above runs in this process
            lambda run, n: f"{run}-{n}".encode(),
            {"Content-Type": "application/json"},
            seconds=0.3,
            clients=2,
            runs=3,
        )
    assert len(loads) == 3
    assert {b"0-0", b"1-0", b"2-0"} <= set(seen)
    assert all(load.result.latencies for load in loads)
    if bench_web.process_tree_cpu(os.getpid()) is not None:  # Linux: /proc
        assert all(load.server_cpu is not None for load in loads)

    def run(answered: int, cpu: float) -> bench_web.LoadRun:
        return bench_web.LoadRun(bench_web.LoadResult(1.0, [0.001] * answered, ["HTTP 500"]), cpu)

    summary = bench_web.LoadSummary.of([run(400, 1.6), run(500, 1.5), run(480, 1.44)])
    assert summary.rate == 480 and summary.cpu_per_request == pytest.approx(0.003)
    assert summary.rates == "median of 3 runs: 400, 500, 480/s"
    assert summary.cpus == "median of 3 runs: 4.0, 3.0, 3.0 ms"
    assert len(summary.latencies) == 1380 and len(summary.errors) == 3
    one = bench_web.LoadSummary.of([run(400, 1.6)])
    assert (one.rate, one.rates, one.cpus) == (400, "", "")


def test_the_web_sections_refuse_a_process_where_django_is_configured():
    with (
        pytest.raises(RuntimeError, match="python -m memapp.bench --web"),
        bench_web.web_sections(load_seconds=0),
    ):
        pass


def _bench_in_own_process(*args: str) -> str:
    """`python -m memapp.bench` in a process where Django is not set up yet: its output. It
    must exit 0 and print no traceback (not even from an exit hook, after the table)."""
    done = subprocess.run(
        [sys.executable, "-m", "memapp.bench", *args],
        cwd=common.PROJECT_ROOT,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr[-3000:]
    return done.stdout


def test_a_combined_run_measures_every_section_and_ends_cleanly():
    """Sections that set Django up (web, MCP, team, consolidation) in one run share one data
    dir, and the recall counts the web section buffers are written before that dir goes: the
    run exits 0 with every row and no traceback. Small sizes: this is about the runner and
    every row it prints, the HTTP server's load test included."""
    out = _bench_in_own_process(
        "--sizes", "50", "--runs", "1", "--quiet", "--web", "--load-seconds", "1",
        "--clients", "2", "--mcp", "--team", "--team-files", "40", "--consolidation",
        "--stores", "20", "--store-files", "150",
    )  # fmt: skip
    for measure in (
        "mirror build (first rescan_store)",
        "mirror rescan (unchanged, rescan_store)",
        "store page GET /stores/<id>/",
        "store page search ?q=deploy (htmx)",
        "store page search ?q=_1234 (part of a path, htmx)",
        "recall API p50 POST /api/v1/recall",
        "recall API p99",
        "prompt API GET /api/v1/prompt",
        "prompt API, MEMORY.md just edited",
        "recall throughput (2 workers, 2 clients)",
        "recall under load, server CPU per request",
        "recall under load p50 (client)",
        "recall under load p99 (client)",
        "MCP tools/call recall",
        "team push, git work (commit + push)",
        "secret scan, fast rules",
        "secret scan, push gate (cold)",
        "secret scan, push gate (unchanged)",
        "team push, whole do_sync_team()",
        "team pull, do_sync_team(push=False)",
        "team protocol GET ?view=hashes",
        "gates of 20 stores (the sweep)",
        "consolidation request of a store",
        "apply a 50-change proposal",
    ):
        assert measure in out
    assert "≤ 3.0×" in out and "≤ 10 s" in out and "was 1.69 s" in out and "≤ 20 ms" in out
    assert "≥ 1,000/s" in out and "files changed by a teammate" in out
    assert "said: due" in out and "48 updates, a delete, the index" in out
    assert "≤ 1 s" in out and "≤ 150 ms" in out and "was 283 ms" in out
    assert "≤ 10 ms" in out and "≤ 50 ms" in out and "≤ 5 ms" in out
    assert "≥ 500/s" in out and ", 0 errors" in out and "≤ 2 ms" in out
    assert "was 210–228/s" in out and "was 6.7–7.0 ms" in out
    assert "% of questions answered, 100% of unrelated empty" in out
    assert "load average" in out


@pytest.mark.django_db
def test_a_tiny_scale_run_prints_every_page_and_api_call_with_its_queries(settings, tmp_path):
    """The scale benchmark's generation and every measurement, on the test database (SQLite
    or PostgreSQL, so both bulk-insert paths run) at its smallest: `run` is this on a data dir
    of its own."""
    from memapp.bench import scale

    settings.MEMHUB_DATA_DIR = tmp_path
    rows = scale.measure(scale.Scale.at(0.0001), runs=1, progress=False)
    table = common.format_table(rows)
    for role, pages in (
        ("member", scale.MEMBER_PAGES),
        ("staff", scale.MEMBER_PAGES + scale.STAFF_PAGES),
    ):
        for page in pages:
            lines = [line for line in table.splitlines() if f"  {role}: {page}  " in line]
            assert len(lines) == 1, f"{role}: {page}\n{table}"
            assert re.search(r"≤ 150 ms [✓✗]  [1-9]\d* queries", lines[0]), lines[0]
    for call in (
        *("recall p50 POST", "prompt GET", "session start POST", "sessions upload,"),
        *("session GET", "proposals GET", "team protocol GET  ", "team protocol GET ?view"),
    ):
        lines = [line for line in table.splitlines() if f"agent: {call}" in line]
        assert len(lines) == 1, f"{call}\n{table}"
        assert re.search(r"≤ \d+ ms [✓✗]  [1-9]\d* queries", lines[0]), lines[0]
    assert "scale: generate the database" in table
