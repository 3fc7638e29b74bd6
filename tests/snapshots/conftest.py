"""A checkout on this host with a snapshot of the `reviewer` agent, and alice's agent memory
(user scope, under a temp memory base) that the snapshot would update."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memapp.memdir.agent_snapshots import MARKER_FILENAME

T1 = "2026-03-01T10:00:00.000Z"
T2 = "2026-03-05T09:30:00.000Z"
SLUG = "acme/widgets"


def topic(name: str, description: str, type_: str = "feedback", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n{body}"


def write_files(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def write_snapshot(repo: Path, agent: str, updated_at: str, files: dict[str, str]) -> Path:
    path = repo / ".claude" / "agent-memory-snapshots" / agent
    write_files(path, files)
    (path / "snapshot.json").write_text(json.dumps({"updatedAt": updated_at}))
    return path


def mark(memory: Path, synced_from: str) -> None:
    (memory / MARKER_FILENAME).write_text(json.dumps({"syncedFrom": synced_from}))


SNAPSHOT = {
    "MEMORY.md": "- [Style](style.md) — style guide\n- [Tests](tests.md) — test rules\n"
    "- [Flaky](flaky.md) — flaky tests\n",
    "style.md": topic("Style", "Style guide lives in docs/style.md", "reference"),
    "tests.md": topic(
        "Tests",
        "Integration tests hit a real database",
        "feedback",
        "Use the real database.\n\n**Why:** mocks hid a migration bug.\n"
        "**How to apply:** every integration test.\n",
    ),
    "flaky.md": topic("Flaky", "test_orders is flaky under load", "project"),
}
LOCAL = {
    "MEMORY.md": "- [Style](style.md) — style guide\n- [Tests](tests.md) — test rules\n"
    "- [Mine](mine.md) — my notes\n",
    "style.md": topic("Style", "Style guide lives in docs/style.md", "reference"),
    "tests.md": topic(
        "Tests",
        "Tests hit a database",
        "user",
        "Use a database.\n\n**Why:** mocks hid a bug.\n**How to apply:** every integration test.\n",
    ),
    "mine.md": topic("Mine", "My own notes", "user"),
}


@pytest.fixture
def memory_base(tmp_path, monkeypatch) -> Path:
    base = tmp_path / "claude"
    base.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(base))
    monkeypatch.delenv("CLAUDE_CODE_REMOTE_MEMORY_DIR", raising=False)
    return base


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "src" / "widgets"
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(
        ["git", "-C", str(path), "remote", "add", "origin", f"git@github.com:{SLUG}.git"],
        check=True,
    )
    write_snapshot(path, "reviewer", T2, SNAPSHOT)
    return path


@pytest.fixture
def user_memory(memory_base) -> Path:
    """alice's user-scope memory of the reviewer, synced from an older snapshot."""
    memory = write_files(memory_base / "agent-memory" / "reviewer", LOCAL)
    mark(memory, T1)
    return memory


@pytest.fixture
def checkout(alice, repo, user_memory):
    from snapshots.actions import do_register_checkout

    return do_register_checkout(alice, repo)


def review_url(checkout, scope: str = "user", agent: str = "reviewer") -> str:
    return f"/snapshots/{checkout.pk}/{agent}/{scope}/"
