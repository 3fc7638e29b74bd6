"""How good offline recall is, on a labelled set of queries over a realistic memory directory.

    python -m memapp.bench.recall_eval [--verbose] [--split dev|holdout]

The set ships with the package (``memapp/memdir/evalset/``): ``memory/`` is the memory directory
of a backend engineer on an invoicing product (88 topic files, private and team, including
files with a broken or missing header), ``ages.json`` gives each file's age in days, and
``queries.json`` the queries, each ``{query, recent_tools, already_surfaced, expected, category,
split}``. The directory is copied to a temporary one whose mtimes are set from the ages, so
newest-first order and recency behave as they would on a real disk.

Figures, each a mean over queries:

- precision@5: of the memories returned (at most 5), the share that were expected; a query that
  expected memories and got none counts 0. Over queries that expect at least one memory.
- recall@5: of the expected memories, the share returned. Same queries.
- F1: the harmonic mean of the two means.
- empty-answer accuracy: the share of queries expecting nothing that got nothing.

The ``holdout`` split was written after the ranking was tuned on ``dev`` and not used to tune it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memapp.memdir.offline_recall import clear_recall_cache, recall_offline

CATEGORIES = ("direct", "synonym", "tool", "surfaced", "empty")


@dataclass(frozen=True)
class Query:
    query: str
    expected: tuple[str, ...]
    recent_tools: tuple[str, ...] = ()
    already_surfaced: tuple[str, ...] = ()
    category: str = "direct"
    split: str = "dev"


@dataclass(frozen=True)
class Outcome:
    query: Query
    returned: tuple[str, ...]

    @property
    def hits(self) -> int:
        return len(set(self.returned) & set(self.query.expected))

    @property
    def precision(self) -> float:
        return self.hits / len(self.returned) if self.returned else 0.0

    @property
    def recall(self) -> float:
        return self.hits / len(self.query.expected) if self.query.expected else 0.0


@dataclass
class Figures:
    """Precision, recall, F1 and empty-answer accuracy over some outcomes."""

    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def answerable(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.query.expected]

    @property
    def unanswerable(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.query.expected]

    @property
    def precision(self) -> float | None:
        rows = self.answerable
        return sum(o.precision for o in rows) / len(rows) if rows else None

    @property
    def recall(self) -> float | None:
        rows = self.answerable
        return sum(o.recall for o in rows) / len(rows) if rows else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def empty_accuracy(self) -> float | None:
        rows = self.unanswerable
        return sum(1 for o in rows if not o.returned) / len(rows) if rows else None


def evalset_dir() -> Path:
    return Path(str(resources.files("memapp.memdir") / "evalset"))


def load_queries(root: Path | None = None) -> list[Query]:
    root = root or evalset_dir()
    items = json.loads((root / "queries.json").read_text(encoding="utf-8"))
    return [
        Query(
            query=item["query"],
            expected=tuple(item["expected"]),
            recent_tools=tuple(item.get("recent_tools", ())),
            already_surfaced=tuple(item.get("already_surfaced", ())),
            category=item.get("category", "direct"),
            split=item.get("split", "dev"),
        )
        for item in items
    ]


@contextmanager
def memory_copy(now: float, root: Path | None = None) -> Iterator[Path]:
    """A temporary copy of the set's memory directory, mtimes set to ``now`` minus each age."""
    root = root or evalset_dir()
    ages = json.loads((root / "ages.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="memhub-eval-") as tmp:
        target = Path(tmp) / "memory"
        shutil.copytree(root / "memory", target)
        for rel, days in ages.items():
            stamp = now - float(days) * 86_400
            os.utime(target / rel, (stamp, stamp))
        yield target


def evaluate(queries: Sequence[Query] | None = None) -> list[Outcome]:
    """Run every query against a fresh copy of the set and return what recall answered."""
    queries = load_queries() if queries is None else queries
    now = time.time()
    clear_recall_cache()
    try:
        with memory_copy(now) as directory:
            return [
                Outcome(
                    q,
                    tuple(
                        h.path
                        for h in recall_offline(
                            directory,
                            q.query,
                            recent_tools=q.recent_tools,
                            already_surfaced=q.already_surfaced,
                            now_ms=now * 1000,
                        )
                    ),
                )
                for q in queries
            ]
    finally:
        clear_recall_cache()


def _fmt(value: float | None) -> str:
    return "   -" if value is None else f"{value:.2f}"


def report(outcomes: Sequence[Outcome]) -> str:
    lines = [f"{'':<10} {'queries':>7} {'P@5':>5} {'R@5':>5} {'F1':>5} {'empty acc':>9}"]

    def row(label: str, rows: list[Outcome]) -> None:
        f = Figures(rows)
        lines.append(
            f"{label:<10} {len(rows):>7} {_fmt(f.precision):>5} {_fmt(f.recall):>5} "
            f"{_fmt(f.f1):>5} {_fmt(f.empty_accuracy):>9}"
        )

    row("all", list(outcomes))
    for split in sorted({o.query.split for o in outcomes}):
        row(split, [o for o in outcomes if o.query.split == split])
    lines.append("")
    for category in CATEGORIES:
        rows = [o for o in outcomes if o.query.category == category]
        if rows:
            row(category, rows)
    return "\n".join(lines)


def misses(outcomes: Sequence[Outcome]) -> str:
    lines = []
    for o in outcomes:
        if set(o.returned) == set(o.query.expected):
            continue
        tools = f" tools={list(o.query.recent_tools)}" if o.query.recent_tools else ""
        lines.append(f"[{o.query.category}] {o.query.query!r}{tools}")
        lines.append(f"    expected: {', '.join(o.query.expected) or '(nothing)'}")
        lines.append(f"    returned: {', '.join(o.returned) or '(nothing)'}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memapp.bench.recall_eval", description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="list every imperfect answer")
    parser.add_argument("--split", choices=("dev", "holdout"), help="only this split")
    args = parser.parse_args(argv)
    queries = load_queries()
    if args.split:
        queries = [q for q in queries if q.split == args.split]
    outcomes = evaluate(queries)
    print(report(outcomes))
    if args.verbose:
        print()
        print(misses(outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
