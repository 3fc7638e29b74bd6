"""memhub in Gemini CLI: its hooks and `memhub-agent mcp` in Gemini CLI's `settings.json`
(docs/design.md §28). `user` scope: `$GEMINI_CLI_HOME/.gemini/settings.json` (the home
directory when unset), as Gemini CLI reads it; `project` scope: the checkout's
`.gemini/settings.json`. Both the hooks and the server go in the one file."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memapp.client.install.hook_settings import hook_events, with_hooks, without_hooks
from memapp.client.install.settings_files import SettingsError, edit_json

__all__ = ["HOOKS", "Placement", "gemini_home", "install", "installed", "placement", "uninstall"]

AGENT = "gemini-cli"
# Gemini CLI's hook events and memhub-agent's names for them (as `hook gemini-cli` reads them).
HOOKS = {
    "SessionStart": "session-start",
    "BeforeAgent": "before-agent",
    "AfterAgent": "after-agent",
    "SessionEnd": "session-end",
}
SERVER_NAME = "memhub"


@dataclass(frozen=True)
class Placement:
    hooks_file: Path
    mcp_file: Path


def gemini_home(env: Mapping[str, str] | None = None) -> Path:
    """`~/.gemini`, where Gemini CLI keeps its settings, projects and memory."""
    environ = os.environ if env is None else env
    home = environ.get("GEMINI_CLI_HOME") or environ.get("HOME") or str(Path.home())
    return Path(home) / ".gemini"


def placement(scope: str, checkout: Path, env: Mapping[str, str] | None = None) -> Placement:
    path = (
        checkout / ".gemini" / "settings.json"
        if scope == "project"
        else gemini_home(env) / "settings.json"
    )
    return Placement(path, path)


def _our_server(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and str(entry.get("command", "")).endswith("memhub-agent")
        and entry.get("args") == ["mcp"]
    )


def _add(settings: dict[str, Any], program: str, path: Path) -> None:
    servers = settings.setdefault("mcpServers", {})
    current = servers.get(SERVER_NAME)
    if current is not None and not _our_server(current):
        raise SettingsError(f"{path} already has another MCP server named {SERVER_NAME!r}")
    servers[SERVER_NAME] = {"command": program, "args": ["mcp"]}
    with_hooks(settings, AGENT, program, HOOKS)


def _remove(settings: dict[str, Any]) -> None:
    without_hooks(settings, AGENT)
    servers = settings.get("mcpServers")
    if isinstance(servers, dict) and _our_server(servers.get(SERVER_NAME)):
        del servers[SERVER_NAME]
        if not servers:
            del settings["mcpServers"]


def install(
    scope: str, checkout: Path, agent: str, env: Mapping[str, str] | None = None
) -> list[str]:
    path = placement(scope, checkout, env).hooks_file
    return [edit_json(path, lambda settings: _add(settings, agent, path))]


def uninstall(scope: str, checkout: Path, env: Mapping[str, str] | None = None) -> list[str]:
    return [edit_json(placement(scope, checkout, env).hooks_file, _remove)]


def installed(
    scope: str, checkout: Path, env: Mapping[str, str] | None = None
) -> tuple[list[str], bool]:
    path = placement(scope, checkout, env).hooks_file
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
        server = _our_server((settings.get("mcpServers") or {}).get(SERVER_NAME))
    except (OSError, ValueError, AttributeError):
        server = False
    return hook_events(path, AGENT), server
