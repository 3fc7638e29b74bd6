"""What every benchmark section shares: generated corpora, timing, the result table.

A section is a function ``(corpus, runs) -> list[Row]``; :func:`run` calls each on a fresh corpus
of each size. A :class:`Row` holds a median, its floor (the plainest code doing the same work,
measured in the same run) and a target: a ratio to the floor, a latency or a rate.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


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

    Mostly top-level files; some under ``team/`` and ``team/<mount>/`` and a few topic
    subdirectories; besides them, one daily log under ``logs/YYYY/MM/`` (no frontmatter) for
    every ninth memory, which a scan walks past (docs/design.md §6a). Mtimes spread over a year.
    """
    from tqdm import tqdm

    rng = random.Random(seed)
    now = time.time()
    dirs = ["", "", "", "", "", "", "team/", "team/web/", "notes/infra/"]
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
        for i in range(size + size // 9):
            if i < size:
                where = rng.choice(dirs)
                text, name, description = _memory_text(rng, i, slugs)
                rel = f"{where}{name.lower().replace(' ', '_')[:40]}_{i}.md"
                slugs.append(name)
                index_lines.append(f"- [{name}]({rel}) — {description}")
            else:
                day = time.gmtime(now - rng.uniform(0, 365 * 86400))
                where = time.strftime("logs/%Y/%m/", day)
                rel = f"{where}{time.strftime('%Y-%m-%d', day)}-{i}.md"
                text = "\n".join(f"- {_sentence(rng, rng.randint(5, 15))}" for _ in range(6))
                text += "\n"
            if where not in made:
                (root / where).mkdir(parents=True, exist_ok=True)
                made.add(where)
            path = root / rel
            path.write_text(text, encoding="utf-8")
            mtime = now - rng.uniform(0, 365 * 86400)
            os.utime(path, (mtime, mtime))
            bar.update(i < size)
    index_text = "\n".join(index_lines) + "\n"
    (root / "MEMORY.md").write_text(index_text, encoding="utf-8")
    if (root / "team").is_dir():
        (root / "team" / "MEMORY.md").write_text(index_text[:2000], encoding="utf-8")
    return Corpus(root, size, index_text)


# -- floors -----------------------------------------------------------------------------------


def timed(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def medians(runs: int, *funcs: Callable[[], float]) -> list[float]:
    """Run the measurements interleaved (so drift hits all alike); the median of each."""
    results: list[list[float]] = [[] for _ in funcs]
    for _ in range(runs):
        for slot, func in zip(results, funcs, strict=True):
            slot.append(func())
    return [statistics.median(slot) for slot in results]


Section = Callable[[Corpus, int], list[Row]]


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
    sizes: Sequence[int], runs: int, sections: Sequence[Section], progress: bool = True
) -> list[Row]:
    """Each section on a fresh generated corpus of each size."""
    rows: list[Row] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="memhub-bench-") as tmp:
            corpus = generate_corpus(Path(tmp) / "memory", size, progress=progress)
            for section in sections:
                rows.extend(section(corpus, runs))
    return rows


def load_average() -> str:
    try:
        return " / ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "unknown"
