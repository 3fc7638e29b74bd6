"""Gemini CLI's and Codex CLI's own memory switches, honoured by memhub's hooks as Claude Code's
`autoMemoryEnabled: false` is (docs/design.md §28).

Each agent's memory is off by default, in Codex (`[features] memories`) and in Gemini CLI
(`experimental.autoMemory`), because memhub's hooks are then the memory: so only a switch the
person set to `false` in their own settings counts, never a setting left out. What each switch
stops follows what it stops in the agent itself:

- Codex `config.toml`: `[features] memories = false` stops everything; `[memories]
  use_memories = false` (no memory in the prompt) stops what the hooks add to the context
  (session start, recall); `generate_memories = false` (no memories made from threads) stops
  the transcript uploads, so nothing is extracted or counted for consolidation.
- Gemini CLI `settings.json`: `experimental.autoMemory: false` stops the mining of past
  sessions, so memhub uploads no transcript; Gemini CLI keeps loading its memory files, so
  recall stays.

A project's own settings (`<folder>/.codex/config.toml`, `<folder>/.gemini/settings.json`) win
over the person's. Read on every hook, so they stay cheap: TOML is parsed only for a file that
mentions memories.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RECALL", "RECORD", "agent_memory_allows"]

RECALL = "recall"  # adding memory to the agent's context
RECORD = "record"  # sending the session, from which memory is made


def _home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def _toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    if "memories" not in text:
        return {}
    import tomllib  # only for a file that may switch memory off

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _get(data: dict[str, Any], table: str, key: str) -> Any:
    section = data.get(table)
    return section.get(key) if isinstance(section, dict) else None


def _codex(environ: Mapping[str, str], where: Path, what: str) -> bool:
    home = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else _home(environ) / ".codex"
    key = "use_memories" if what == RECALL else "generate_memories"
    feature, switch = None, None  # the last explicit value of each, the project's last
    for config in (_toml(home / "config.toml"), _toml(where / ".codex" / "config.toml")):
        if isinstance(found := _get(config, "features", "memories"), bool):
            feature = found
        if isinstance(found := _get(config, "memories", key), bool):
            switch = found
    return feature is not False and switch is not False


def _gemini(environ: Mapping[str, str], where: Path, what: str) -> bool:
    if what == RECALL:
        return True
    home = Path(environ.get("GEMINI_CLI_HOME") or _home(environ)) / ".gemini"
    value = None
    for settings in (_json(home / "settings.json"), _json(where / ".gemini" / "settings.json")):
        found = _get(settings, "experimental", "autoMemory")
        if isinstance(found, bool):
            value = found
    return value is not False


def agent_memory_allows(agent: str, what: str, env: Mapping[str, str] | None, where: Path) -> bool:
    """Whether the agent's own switches allow `what` (RECALL or RECORD) for the folder
    `where`; an agent without switches of its own (Claude Code's are read elsewhere) allows."""
    environ = os.environ if env is None else env
    if agent == "codex":
        return _codex(environ, where, what)
    if agent == "gemini-cli":
        return _gemini(environ, where, what)
    return True
