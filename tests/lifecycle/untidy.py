"""A store with every problem consolidation exists for: near-duplicate memories, a project
memory with relative dates, an index over both caps with duplicated and dangling entries."""

from __future__ import annotations

import datetime
import itertools
import os
from pathlib import Path

from memapp.memdir.index import format_index_entry, parse_index_entries
from memapp.memdir.lint import relative_dates
from tests.conftest import write_memory

WRITTEN = datetime.datetime(2026, 3, 5, 10, 0, tzinfo=datetime.UTC)  # a Thursday
FILLER = 210  # enough entries for more than 200 lines and 25,000 bytes
# Three of these per description: no two descriptions alike enough to be near-duplicates.
WORDS = ["grafana", "kafka", "sentry", "staging", "billing", "invoices", "runbook", "oncall"]
WORDS += ["pagerduty", "replica", "schema", "dashboards", "alerts", "webhooks", "retries"]
WORDS += ["budgets", "quotas", "exports", "archives", "tracing"]


def stamp(path: Path, when: datetime.datetime) -> None:
    os.utime(path, (when.timestamp(), when.timestamp()))


def make_untidy(root: Path) -> None:
    """Write the store's files, each with its own date (older memories first)."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, words in enumerate(itertools.islice(itertools.combinations(WORDS, 3), FILLER)):
        key = f"reference_note_{i:03}.md"
        path = write_memory(root, key, f"Note {i}", " ".join(words).capitalize(), "reference")
        stamp(path, WRITTEN - datetime.timedelta(days=400 - i))
        lines.append(format_index_entry(f"Note {i}", key, "reference material " + "x" * 70))
    db = write_memory(
        root,
        "feedback_db.md",
        "Real database",
        "Integration tests must hit a real database, not mocks",
        "feedback",
        "Use the real database.\n\n**Why:** mocks hid a broken migration.\n"
        "**How to apply:** every integration test.\n",
    )
    again = write_memory(
        root,
        "feedback_db_again.md",
        "Real database again",
        "Integration tests must hit the real database, never mocks",
        "feedback",
        "No mocks for the database.\n\n**Why:** the March incident.\n"
        "**How to apply:** integration tests.\n",
    )
    freeze = write_memory(
        root,
        "project_freeze.md",
        "Code freeze",
        "Code freeze starts next Tuesday",
        "project",
        "The code freeze starts next Tuesday and lasts until the end of the month.\n\n"
        "**Why:** the release is cut then.\n**How to apply:** no merges after it starts.\n",
    )
    for path in (db, again, freeze):
        stamp(path, WRITTEN)
    lines += [
        format_index_entry("Real database", "feedback_db.md", "no mocks"),
        format_index_entry("Real database (again)", "feedback_db.md", "listed twice"),
        format_index_entry("Real database again", "feedback_db_again.md", "never mocks"),
        format_index_entry("Code freeze", "project_freeze.md", "freeze starts next Tuesday"),
        format_index_entry("Gone", "gone.md", "a memory deleted long ago"),
        format_index_entry("Also gone", "old/notes.md", "another one"),
    ]
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def index_problems(root: Path, max_lines: int = 200, max_bytes: int = 25_000) -> dict:
    """What is wrong with the store's index and memories, as the done-when of issue 14 asks."""
    text = (root / "MEMORY.md").read_text(encoding="utf-8")
    stripped = text.strip()
    entries = parse_index_entries(text)
    paths = [e.path for e in entries]
    dated = [
        p.name
        for p in root.glob("*.md")
        if p.name != "MEMORY.md"
        and "type: project" in p.read_text()
        and relative_dates(p.read_text())
    ]
    return {
        "over_lines": stripped.count("\n") + 1 > max_lines,
        "over_bytes": len(stripped.encode()) > max_bytes,
        "dangling": [p for p in paths if not (root / p).is_file()],
        "doubled": sorted({p for p in paths if paths.count(p) > 1}),
        "relative_dates": dated + (["MEMORY.md"] if relative_dates(text) else []),
    }


def plant_distillation_and_consolidation(root: Path) -> None:
    """A daily-log entry, a project memory with a relative date and a dangling index entry:
    what makes one run propose both a distillation and a consolidation."""
    from memapp.memdir.daily_logs import append_to_log

    write_memory(
        root,
        "project_freeze.md",
        "Code freeze",
        "Code freeze starts next Tuesday",
        "project",
        "Freeze from next Tuesday.\n\n**Why:** the release.\n**How to apply:** no merges.\n",
    )
    with (root / "MEMORY.md").open("a") as index:
        index.write("- [Gone](gone.md) — a memory deleted long ago\n")
    append_to_log(
        root,
        "logs/2026/03/2026-03-05.md",
        ["- 09:05 [project] Staging moves to staging-2.example.com. Why: the old one is retired."],
    )
