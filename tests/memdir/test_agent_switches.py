"""Gemini CLI's and Codex CLI's own memory switches (docs/design.md §28): only a `false` the
person wrote counts; each stops what it stops in the agent; a project's settings win."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memapp.memdir.agent_switches import RECALL, RECORD, agent_memory_allows


@pytest.fixture
def home(tmp_path) -> Path:
    (tmp_path / "home" / ".codex").mkdir(parents=True)
    (tmp_path / "home" / ".gemini").mkdir(parents=True)
    (tmp_path / "repo").mkdir()
    return tmp_path


def allows(home: Path, agent: str) -> tuple[bool, bool]:
    env = {"HOME": str(home / "home")}
    return tuple(agent_memory_allows(agent, w, env, home / "repo") for w in (RECALL, RECORD))


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("", (True, True)),  # nothing set: Codex's own memory is off, memhub's is the memory
        ("[features]\nmemories = true\n", (True, True)),
        ("[features]\nmemories = false\n", (False, False)),
        ("[memories]\nuse_memories = false\n", (False, True)),
        ("[memories]\ngenerate_memories = false\n", (True, False)),
        ('[memories]\nuse_memories = "no"\n', (True, True)),  # not a boolean: not a switch
        ("[memories\nbroken", (True, True)),  # Codex itself refuses it: nothing to honour
    ],
)
def test_codex_switches(home, config, expected):
    (home / "home" / ".codex" / "config.toml").write_text(config)
    assert allows(home, "codex") == expected


def test_codex_home_and_the_projects_config(home):
    (home / "home" / ".codex" / "config.toml").write_text("[memories]\nuse_memories = false\n")
    (home / "repo" / ".codex").mkdir()
    (home / "repo" / ".codex" / "config.toml").write_text("[memories]\nuse_memories = true\n")
    assert allows(home, "codex") == (True, True)  # the project's own wins
    elsewhere = home / "codex-home"
    elsewhere.mkdir()
    (elsewhere / "config.toml").write_text("[features]\nmemories = false\n")
    env = {"HOME": str(home / "home"), "CODEX_HOME": str(elsewhere)}
    assert not agent_memory_allows("codex", RECORD, env, home / "repo")


@pytest.mark.parametrize(
    ("user", "project", "expected"),
    [
        (None, None, (True, True)),
        ({"experimental": {"autoMemory": False}}, None, (True, False)),
        ({"experimental": {"autoMemory": True}}, None, (True, True)),
        ({"experimental": {"autoMemory": False}}, {"experimental": {"autoMemory": True}},
         (True, True)),
        (None, {"experimental": {"autoMemory": False}}, (True, False)),
    ],
)  # fmt: skip
def test_gemini_switch(home, user, project, expected):
    if user is not None:
        (home / "home" / ".gemini" / "settings.json").write_text(json.dumps(user))
    if project is not None:
        (home / "repo" / ".gemini").mkdir()
        (home / "repo" / ".gemini" / "settings.json").write_text(json.dumps(project))
    assert allows(home, "gemini-cli") == expected


def test_claude_code_is_not_read_here(home):
    (home / "home" / ".codex" / "config.toml").write_text("[features]\nmemories = false\n")
    assert allows(home, "claude-code") == (True, True)
