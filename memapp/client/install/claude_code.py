"""memhub in Claude Code: its hooks in a settings file and `memhub-agent mcp` as an MCP server
(docs/design.md §27). Entries are memhub's when their command runs `memhub-agent hook
claude-code` or `memhub-agent mcp`; nothing else in the files is touched.

Scopes, as Claude Code reads them: `user` puts the hooks in `<config>/settings.json` and the
server in `<config>/.claude.json` when `CLAUDE_CONFIG_DIR` is set (else `~/.claude.json`);
`project` puts them in the checkout's `.claude/settings.json` and `.mcp.json`, files a team
commits, so the server runs the relay with each person's own login and no token is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memapp.client.install.hook_settings import hook_events, without_hooks
from memapp.client.install.settings_files import SettingsError, edit_json
from memapp.memdir.paths import config_home

__all__ = ["HOOKS", "SERVER_NAME", "Placement", "install", "installed", "placement", "uninstall"]

# Claude Code's hook events, memhub-agent's names for them, and a matcher where one is needed.
AGENT = "claude-code"  # its name in `memhub-agent hook <agent> <event>`
HOOKS = {
    "SessionStart": ("session-start", None),
    "UserPromptSubmit": ("user-prompt-submit", None),
    "PostToolUse": ("post-tool-use", "Read|Grep"),  # a Grep too: its results name files
    "Stop": ("stop", None),
    "SessionEnd": ("session-end", None),
}
SERVER_NAME = "memhub"


@dataclass(frozen=True)
class Placement:
    hooks_file: Path
    mcp_file: Path


def placement(scope: str, checkout: Path, env: Mapping[str, str] | None = None) -> Placement:
    environ = os.environ if env is None else env
    if scope == "project":
        return Placement(checkout / ".claude" / "settings.json", checkout / ".mcp.json")
    configured = environ.get("CLAUDE_CONFIG_DIR")
    home = Path(environ.get("HOME") or Path.home())
    mcp_file = Path(configured) / ".claude.json" if configured else home / ".claude.json"
    return Placement(config_home(env) / "settings.json", mcp_file)


def _with_ours(settings: dict[str, Any], agent: str) -> None:
    without_hooks(settings, AGENT)
    hooks = settings.setdefault("hooks", {})
    for event, (name, matcher) in HOOKS.items():
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": f"{agent} hook {AGENT} {name}"}]
        hooks.setdefault(event, []).append(group)


def _server(agent: str) -> dict[str, Any]:
    return {"type": "stdio", "command": agent, "args": ["mcp"], "env": {}}


def _our_server(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and str(entry.get("command", "")).endswith("memhub-agent")
        and entry.get("args") == ["mcp"]
    )


def install(
    scope: str, checkout: Path, agent: str, env: Mapping[str, str] | None = None
) -> list[str]:
    """Write memhub's hooks and MCP server for `scope` (replacing memhub's own earlier ones);
    a line per file saying what happened."""
    where = placement(scope, checkout, env)

    def add_server(config: dict[str, Any]) -> None:
        servers = config.setdefault("mcpServers", {})
        current = servers.get(SERVER_NAME)
        if current is not None and not _our_server(current):
            raise SettingsError(
                f"{where.mcp_file} already has another MCP server named {SERVER_NAME!r}"
            )
        servers[SERVER_NAME] = _server(agent)

    # The server first: it is the one that can be refused, and then nothing is written.
    server = edit_json(where.mcp_file, add_server)
    return [edit_json(where.hooks_file, lambda settings: _with_ours(settings, agent)), server]


def uninstall(scope: str, checkout: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """Remove exactly memhub's hooks and MCP server from `scope`'s files."""
    where = placement(scope, checkout, env)

    def drop_server(config: dict[str, Any]) -> None:
        servers = config.get("mcpServers")
        if isinstance(servers, dict) and _our_server(servers.get(SERVER_NAME)):
            del servers[SERVER_NAME]
            if not servers:
                del config["mcpServers"]

    return [
        edit_json(where.hooks_file, lambda settings: without_hooks(settings, AGENT)),
        edit_json(where.mcp_file, drop_server),
    ]


def installed(
    scope: str, checkout: Path, env: Mapping[str, str] | None = None
) -> tuple[list[str], bool]:
    """Which of memhub's hooks are in `scope`'s settings (by event), and whether its server is."""
    where = placement(scope, checkout, env)
    events = hook_events(where.hooks_file, AGENT)
    try:
        config = json.loads(where.mcp_file.read_text(encoding="utf-8"))
        server = _our_server((config.get("mcpServers") or {}).get(SERVER_NAME))
    except (OSError, ValueError, AttributeError):
        server = False
    return events, server
