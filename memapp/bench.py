"""Benchmarks of the memory core against plain-Python floors.

    python -m memapp.bench [--sizes 200,2000,20000] [--runs 5] [--web] [--team]

For each size, a corpus of realistic memory files is generated in a temporary directory (deleted
afterwards), and each section measures some operations on it: the median of ``--runs`` runs,
next to a floor (the plainest Python doing the same I/O) measured in the same run, the ratio, and
a target where one is set. A section is a function ``(corpus, runs) -> list[Row]`` listed in
:data:`SECTIONS`. ``--web`` adds the sections of :mod:`memapp.bench_web` after these (the store
page, the mirror rescan, recall and prompt through the API, recall throughput under gunicorn),
whose targets are absolute (a latency, a rate) rather than ratios to a floor. ``--team`` adds
those of :mod:`teamsync.bench` (a push and a pull of ``--team-files`` memories through a bare
repository, the secret gate, the team memory protocol).

Floors:

- cold scan: ``os.walk`` + ``os.stat`` + the first 30 lines through ``open()``/``islice`` +
  ``yaml.load(..., Loader=yaml.CSafeLoader)`` of the frontmatter (:func:`floor_cold_scan`). Both
  this and the cold scan run in a fresh process each time, so nothing is cached in-process (the
  OS page cache is warm for both).
- warm rescan: a bare ``os.scandir`` walk that stats every file (:func:`floor_stat_walk`).
- manifest: one f-string per header, without time formatting.
- index truncation: split into lines, keep 200, join, cut to 25,000 bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from memapp.memdir.scan import ScanCache, format_manifest, scan_memory_files

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    """One measured operation: median seconds, and its floor and target when it has them."""

    size: int
    measure: str
    seconds: float | None
    floor: float | None = None
    target: float | None = None  # the highest acceptable ratio to the floor
    note: str = ""
    limit: float | None = None  # the most seconds acceptable, for a target without a floor
    rate: float | None = None  # a throughput (per second), shown instead of ``seconds``
    min_rate: float | None = None  # the lowest acceptable throughput
    errors: int = 0  # failed requests while measuring: the target is missed whatever the figure

    @property
    def ratio(self) -> float | None:
        if self.seconds is None or not self.floor:
            return None
        return self.seconds / self.floor

    @property
    def met(self) -> bool | None:
        if self.errors:
            return False
        if self.target is not None and self.ratio is not None:
            return self.ratio <= self.target
        if self.limit is not None and self.seconds is not None:
            return self.seconds <= self.limit
        if self.min_rate is not None and self.rate is not None:
            return self.rate >= self.min_rate
        return None


@dataclass
class Corpus:
    """A generated memory directory and what it holds."""

    root: Path
    size: int
    index_text: str
    extra: dict[str, object] = field(default_factory=dict)


# -- corpus generation ------------------------------------------------------------------------

_TOPICS = [
    "integration tests",
    "database migrations",
    "the deploy pipeline",
    "code review",
    "release notes",
    "the staging cluster",
    "feature flags",
    "API versioning",
    "error budgets",
    "the billing service",
    "log retention",
    "on-call handover",
    "dependency upgrades",
    "the search index",
    "cache invalidation",
    "the mobile app",
]
_VERBS = ["must use", "should avoid", "prefers", "relies on", "documents", "tracks", "owns"]
_OBJECTS = [
    "a real database, not mocks",
    "small pull requests",
    "absolute dates (2026-03-05)",
    "the shared Grafana board",
    "feature branches under 2 days",
    "one commit per logical change",
    "the #incidents channel",
    "pinned versions in requirements.txt",
    "UTC timestamps everywhere",
]
_WORDS = [
    *("the", "a", "team", "service", "config", "deploy", "test", "review", "branch", "merge"),
    *("release", "user", "owner", "database", "latency", "budget", "alert", "dashboard"),
    *("rollout", "canary", "schema", "index", "queue", "worker", "retry", "timeout", "because"),
    *("when", "always", "never", "prefer", "avoid", "check", "verify", "document", "incident"),
    *("fix", "regression"),
]


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _memory_text(rng: random.Random, i: int, slugs: list[str]) -> tuple[str, str, str]:
    """(file text, name, description) of one realistic topic file."""
    mtype = rng.choice(("user", "feedback", "project", "reference"))
    topic = rng.choice(_TOPICS)
    title = f"{topic.capitalize()} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
    description = f"{title} ({rng.choice(_WORDS)} {rng.choice(_WORDS)}, #{i})"
    form = rng.random()
    if form < 0.6:
        name = title
        header = [f"name: {name}", f"description: {description}", f"type: {mtype}"]
    else:
        name = f"{topic.replace(' ', '-').lower()}-{i}"
        header = [f"name: {name}", f"description: {description}"]
        if form < 0.8:
            header.append(f"metadata: {{type: {mtype}}}")
        else:
            header += ["metadata:", f"  type: {mtype}"]
    roll = rng.random()
    if roll < 0.02:
        header[1] = f"description: {title}: see {rng.choice(_WORDS)} #{i}"  # needs the retry
    elif roll < 0.05:
        header[1] = f'description: "{title}: quoted"'
    elif roll < 0.07:
        header.append(f"tags: [{rng.choice(_WORDS)}, {rng.choice(_WORDS)}]")
    body = [_sentence(rng, rng.randint(8, 25))]
    if mtype in ("feedback", "project"):
        body += ["", f"**Why:** {_sentence(rng, rng.randint(6, 20))}"]
        body += [f"**How to apply:** {_sentence(rng, rng.randint(6, 20))}"]
    for _ in range(rng.randint(0, 6)):
        body += ["", _sentence(rng, rng.randint(10, 40))]
    if slugs and rng.random() < 0.3:
        body += ["", f"See [[{rng.choice(slugs)}]]."]
    text = "---\n" + "\n".join(header) + "\n---\n" + "\n".join(body) + "\n"
    return text, name, description


def generate_corpus(root: Path, size: int, seed: int = 0, progress: bool = True) -> Corpus:
    """Write ``size`` topic files under ``root``, with ``MEMORY.md`` indexes, and return them.

    Mostly top-level files; some under ``team/`` and ``team/<mount>/``, daily logs under
    ``logs/YYYY/MM/`` (no frontmatter) and a few topic subdirectories. Mtimes spread over a year.
    """
    from tqdm import tqdm

    rng = random.Random(seed)
    now = time.time()
    dirs = ["", "", "", "", "", "", "team/", "team/web/", "notes/infra/", "logs/"]
    slugs: list[str] = []
    index_lines: list[str] = []
    made: set[str] = set()
    with tqdm(
        total=size,
        desc=f"generating {size:,} memories",
        unit="file",
        file=sys.stderr,
        disable=not progress,
        leave=False,
    ) as bar:
        for i in range(size):
            where = rng.choice(dirs)
            if where == "logs/":
                day = time.gmtime(now - rng.uniform(0, 365 * 86400))
                where = time.strftime("logs/%Y/%m/", day)
                rel = f"{where}{time.strftime('%Y-%m-%d', day)}-{i}.md"
                text = "\n".join(f"- {_sentence(rng, rng.randint(5, 15))}" for _ in range(6))
                text += "\n"
            else:
                text, name, description = _memory_text(rng, i, slugs)
                rel = f"{where}{name.lower().replace(' ', '_')[:40]}_{i}.md"
                slugs.append(name)
                index_lines.append(f"- [{name}]({rel}) — {description}")
            if where not in made:
                (root / where).mkdir(parents=True, exist_ok=True)
                made.add(where)
            path = root / rel
            path.write_text(text, encoding="utf-8")
            mtime = now - rng.uniform(0, 365 * 86400)
            os.utime(path, (mtime, mtime))
            bar.update()
    index_text = "\n".join(index_lines) + "\n"
    (root / "MEMORY.md").write_text(index_text, encoding="utf-8")
    if (root / "team").is_dir():
        (root / "team" / "MEMORY.md").write_text(index_text[:2000], encoding="utf-8")
    return Corpus(root, size, index_text)


# -- floors -----------------------------------------------------------------------------------


def floor_cold_scan(root: str) -> int:
    """Plain Python: walk, stat, read the first 30 lines, parse the frontmatter with libyaml."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    count = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for filename in filenames:
            if not filename.endswith(".md") or filename == "MEMORY.md":
                continue
            # The plainest code is the point here, hence os.path and open().
            path = os.path.join(dirpath, filename)  # noqa: PTH118
            os.stat(path)  # noqa: PTH116
            with open(path, encoding="utf-8", errors="replace") as handle:  # noqa: PTH123
                head = list(itertools.islice(handle, 30))
            count += 1
            if not head or head[0].rstrip() != "---":
                continue
            for end in range(1, len(head)):
                if head[end].rstrip() == "---":
                    with contextlib.suppress(yaml.YAMLError):
                        yaml.load("".join(head[1:end]), Loader=loader)
                    break
    return count


def floor_stat_walk(root: str) -> int:
    """Plain Python: a bare scandir walk that stats every file."""
    count = 0
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def _worker(kind: str, root: str) -> None:
    """Run one cold measurement in this (fresh) process and print it as JSON."""
    start = time.perf_counter()
    if kind == "scan":
        count = len(scan_memory_files(root, limit=None, cache=ScanCache()))
    else:
        count = floor_cold_scan(root)
    print(json.dumps({"seconds": time.perf_counter() - start, "files": count}))


def _in_fresh_process(kind: str, root: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-m", "memapp.bench", "--worker", kind, str(root)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1])["seconds"])


def _timed(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def _medians(runs: int, *funcs: Callable[[], float]) -> list[float]:
    """Run the measurements interleaved (so drift hits all alike); the median of each."""
    results: list[list[float]] = [[] for _ in funcs]
    for _ in range(runs):
        for slot, func in zip(results, funcs, strict=True):
            slot.append(func())
    return [statistics.median(slot) for slot in results]


# -- sections ---------------------------------------------------------------------------------


def bench_scan(corpus: Corpus, runs: int) -> list[Row]:
    """Cold scan in a fresh process, and a warm rescan of the unchanged directory."""
    root = corpus.root
    scan, floor = _medians(
        runs,
        lambda: _in_fresh_process("scan", root),
        lambda: _in_fresh_process("floor", root),
    )
    rows = [Row(corpus.size, "cold scan (fresh process)", scan, floor, 1.3)]

    cache = ScanCache()
    headers = scan_memory_files(root, limit=None, cache=cache)
    corpus.extra["headers"] = headers
    warm, floor = _medians(
        max(runs, 5),
        lambda: _timed(lambda: scan_memory_files(root, limit=None, cache=cache)),
        lambda: _timed(lambda: floor_stat_walk(str(root))),
    )
    if cache.misses != len(headers):
        raise AssertionError("a warm rescan read files")
    rows.append(Row(corpus.size, "warm rescan (unchanged)", warm, floor, 1.5))
    return rows


def bench_manifest(corpus: Corpus, runs: int) -> list[Row]:
    headers = corpus.extra.get("headers") or scan_memory_files(corpus.root, limit=None)

    def floor() -> str:
        return "\n".join(f"- [{h.type}] {h.path} ({h.mtime_ms}): {h.description}" for h in headers)

    seconds, floor_seconds = _medians(
        max(runs, 5),
        lambda: _timed(lambda: format_manifest(headers)),
        lambda: _timed(floor),
    )
    return [Row(corpus.size, f"format_manifest ({len(headers):,} headers)", seconds, floor_seconds)]


def bench_index(corpus: Corpus, runs: int) -> list[Row]:
    measure = f"truncate_index ({corpus.index_text.count(chr(10)):,} lines)"
    try:
        from memapp.memdir.index import truncate_index
    except ImportError as exc:
        return [Row(corpus.size, measure, None, note=f"skipped: {exc}")]
    text = corpus.index_text

    def floor() -> bytes:
        return "\n".join(text.split("\n")[:200]).encode()[:25_000]

    seconds, floor_seconds = _medians(
        max(runs, 5),
        lambda: _timed(lambda: truncate_index(text)),
        lambda: _timed(floor),
    )
    return [Row(corpus.size, measure, seconds, floor_seconds)]


Section = Callable[[Corpus, int], list[Row]]
SECTIONS: list[Section] = [bench_scan, bench_manifest, bench_index]


# -- output -----------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def _limit(value: float) -> str:
    """A target latency without needless decimals: ``150 ms``, ``2.5 ms``."""
    if value < 1:
        return f"{value * 1e3:g} ms"
    return f"{value:g} s"


def _target(row: Row) -> str:
    if row.target is not None:
        target = f"≤ {row.target:.1f}×"
    elif row.limit is not None:
        target = f"≤ {_limit(row.limit)}"
    elif row.min_rate is not None:
        target = f"≥ {row.min_rate:,.0f}/s"
    else:
        return f"✗  {row.note}" if row.met is False else row.note
    mark = {True: " ✓", False: " ✗", None: ""}[row.met]
    return f"{target}{mark}  {row.note}".rstrip()


def format_table(rows: Sequence[Row]) -> str:
    header = ("files", "measure", "median", "floor", "ratio", "target")
    body = []
    for row in rows:
        ratio = f"{row.ratio:.2f}×" if row.ratio is not None else "—"
        body.append(
            (
                f"{row.size:,}",
                row.measure,
                f"{row.rate:,.0f}/s" if row.rate is not None else _seconds(row.seconds),
                _seconds(row.floor),
                ratio,
                _target(row),
            )
        )
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    right = {0, 2, 3, 4}

    def fmt(line: Sequence[str]) -> str:
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([fmt(header), rule, *(fmt(line) for line in body)])


def run(
    sizes: Sequence[int],
    runs: int,
    progress: bool = True,
    sections: Sequence[Section] = tuple(SECTIONS),
) -> list[Row]:
    rows: list[Row] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="memhub-bench-") as tmp:
            corpus = generate_corpus(Path(tmp) / "memory", size, progress=progress)
            for section in sections:
                rows.extend(section(corpus, runs))
    return rows


def _load_average() -> str:
    try:
        return " / ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memapp.bench",
        description="Benchmarks of the memory core and, with --web, of the web app and API.",
    )
    parser.add_argument("--sizes", default="200,2000,20000", help="corpus sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--web",
        action="store_true",
        help="also measure the store page, the mirror, recall and prompt over HTTP (Django)",
    )
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=10.0,
        help="--web: seconds of recall load against gunicorn (0: skip the load test)",
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="--web: concurrent connections of the load test"
    )
    parser.add_argument(
        "--team",
        action="store_true",
        help="also measure team sync: push, pull, the secret gate and the protocol (Django, git)",
    )
    parser.add_argument(
        "--team-files", type=int, default=1000, help="--team: memory files pushed and pulled"
    )
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(*args.worker)
        return 0
    sizes = [int(size) for size in args.sizes.replace("_", "").split(",") if size.strip()]
    load_before = _load_average()
    legends = []
    with contextlib.ExitStack() as stack:
        sections = list(SECTIONS)
        if args.web:
            from memapp import bench_web  # Django is set up only when asked for

            sections += stack.enter_context(
                bench_web.web_sections(load_seconds=args.load_seconds, clients=args.clients)
            )
            legends.append(bench_web.LEGEND)
        rows = run(sizes, max(args.runs, 1), progress=not args.quiet, sections=sections)
        if args.team:
            from teamsync import bench as team_bench  # Django and git only when asked for

            rows += team_bench.run(args.team_files, max(args.runs, 1), progress=not args.quiet)
            legends.append(team_bench.LEGEND)
    libyaml = "libyaml" if hasattr(yaml, "CSafeLoader") else "pure-Python YAML"
    print(
        f"memhub bench: Python {platform.python_version()}, PyYAML {yaml.__version__} ({libyaml}),"
        f" {os.cpu_count()} CPUs, median of {args.runs} runs"
    )
    print(f"load average (1/5/15 min): {load_before} before, {_load_average()} after")
    print()
    print(format_table(rows))
    print()
    print("floors: cold scan = os.walk + stat + first 30 lines + yaml.load(CSafeLoader), each in a")
    print("fresh process; warm rescan = scandir walk + stat; manifest = bare f-string per header;")
    print("index = split, keep 200 lines, join, cut to 25,000 bytes.")
    for legend in legends:
        print()
        print(legend)
    return 1 if args.check and any(row.met is False for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
