"""memhub in Codex CLI: its hooks in `hooks.json`, and `memhub-agent mcp` as an MCP server in
`config.toml` (docs/design.md §28). `user` scope: `$CODEX_HOME` (`~/.codex` when unset);
`project` scope: the checkout's `.codex/` (Codex reads it in trusted projects only).

Hooks are on by default in Codex 0.171 (`[features] hooks`), but Codex runs a new or changed
hook only once the person has trusted it (`/hooks` in the CLI), so install says so.

`config.toml` is edited as text, so the person's comments and layout stay: memhub's lines are
one block between marker comments, appended at the end. The result must parse as TOML, else
nothing is written. `--uninstall` removes the block, nothing else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memapp.client.install.hook_settings import hook_events, with_hooks, without_hooks
from memapp.client.install.settings_files import SettingsError, edit_json
from memapp.memdir.atomic import write_atomic_bytes

__all__ = ["HOOKS", "Placement", "codex_home", "install", "installed", "placement", "uninstall"]

AGENT = "codex"
# Codex CLI's hook events (the `codex_hooks` feature) and memhub-agent's names for them.
HOOKS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt-submit",
    "Stop": "stop",
    "SessionEnd": "session-end",
}
SERVER_NAME = "memhub"
BEGIN = "# memhub-agent: begin (memhub-agent install codex; --uninstall removes it)"
END = "# memhub-agent: end"
_BLOCK = re.compile(rf"\n?{re.escape(BEGIN)}\n.*?{re.escape(END)}\n?", re.DOTALL)


@dataclass(frozen=True)
class Placement:
    hooks_file: Path
    mcp_file: Path


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    configured = environ.get("CODEX_HOME")
    if configured:
        return Path(configured)
    return Path(environ.get("HOME") or Path.home()) / ".codex"


def placement(scope: str, checkout: Path, env: Mapping[str, str] | None = None) -> Placement:
    home = checkout / ".codex" if scope == "project" else codex_home(env)
    return Placement(home / "hooks.json", home / "config.toml")


def _toml(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is a JSON string for these values


def _without_ours(text: str) -> str:
    if BEGIN not in text:
        return text
    text = _BLOCK.sub("\n", text).strip("\n")
    return text + "\n" if text else ""


def _with_ours(text: str, program: str, path: Path) -> str:
    text = _without_ours(text)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML ({exc}); fix it first") from None
    server = (config.get("mcp_servers") or {}).get(SERVER_NAME)
    if server is not None:
        raise SettingsError(f"{path} already has another MCP server named {SERVER_NAME!r}")
    block = [BEGIN]
    block += [
        f"[mcp_servers.{SERVER_NAME}]",
        f"command = {_toml(program)}",
        'args = ["mcp"]',
        END,
    ]
    result = (text.rstrip("\n") + "\n\n" if text.strip() else "") + "\n".join(block) + "\n"
    tomllib.loads(result)  # what is written parses
    return result


def _edit_text(path: Path, change: Callable[[str], str]) -> str:
    try:
        before = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    after = change(before)
    if after == before:
        return f"{path}: unchanged"
    backup = None
    if path.exists():
        backup = path.with_name(f"{path.name}.memhub-backup-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic_bytes(path, after.encode())
    return f"{path}: written" + (f" (the previous file is in {backup})" if backup else "")


def install(
    scope: str, checkout: Path, agent: str, env: Mapping[str, str] | None = None
) -> list[str]:
    where = placement(scope, checkout, env)
    config = _edit_text(where.mcp_file, lambda text: _with_ours(text, agent, where.mcp_file))
    hooks = edit_json(where.hooks_file, lambda s: with_hooks(s, AGENT, agent, HOOKS))
    trust = (
        "Codex runs new hooks only once you trust them: open /hooks in Codex and trust "
        "memhub's (automation that checked them may pass --dangerously-bypass-hook-trust)"
    )
    return [hooks, config, trust]


def uninstall(scope: str, checkout: Path, env: Mapping[str, str] | None = None) -> list[str]:
    where = placement(scope, checkout, env)
    return [
        edit_json(where.hooks_file, lambda s: without_hooks(s, AGENT)),
        _edit_text(where.mcp_file, _without_ours),
    ]


def installed(
    scope: str, checkout: Path, env: Mapping[str, str] | None = None
) -> tuple[list[str], bool]:
    where = placement(scope, checkout, env)
    try:
        server = BEGIN in where.mcp_file.read_text(encoding="utf-8")
    except OSError:
        server = False
    return hook_events(where.hooks_file, AGENT), server
