"""`memhub-agent install AGENT`: memhub's hooks and MCP server in a coding agent's settings
(docs/design.md §27). One module per agent, named in `AGENTS`; each has `install`,
`uninstall`, `installed` and `placement` for its own settings files, so Gemini CLI or Codex
join as sibling modules."""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
from pathlib import Path
from types import ModuleType

from memapp.client.commands import (
    CWD_OPTION,
    EXIT_USAGE,
    PROG,
    CommandError,
    add_command,
    current_project,
)
from memapp.client.install.settings_files import SettingsError

__all__ = ["AGENTS", "add_install_command", "agent_command", "agent_module", "agents_here"]

AGENTS = {
    "claude-code": "memapp.client.install.claude_code",
    "gemini-cli": "memapp.client.install.gemini_cli",
    "codex": "memapp.client.install.codex",
}


def agent_module(agent: str) -> ModuleType:
    return importlib.import_module(AGENTS[agent])


def agent_command() -> str:
    """How settings name memhub-agent: its bare name when the PATH finds this one, else the
    full path of the one running (a virtualenv's, say)."""
    running = Path(sys.argv[0]).resolve()
    found = shutil.which(PROG)
    if found and Path(found).resolve() == running:
        return PROG
    return str(running) if running.name == PROG else PROG


# What says an agent is on this machine, for `install --all`: its program on the PATH, or its
# configuration folder in the home directory.
PRESENT = {
    "claude-code": ("claude", ".claude"),
    "gemini-cli": ("gemini", ".gemini"),
    "codex": ("codex", ".codex"),
}


def agents_here() -> list[str]:
    home = Path.home()
    return [
        agent
        for agent, (program, folder) in PRESENT.items()
        if shutil.which(program) or (home / folder).is_dir()
    ]


def cmd_install(args: argparse.Namespace) -> int:
    if args.all == bool(args.agent):
        raise CommandError("name one agent, or --all", EXIT_USAGE)
    agents = agents_here() if args.all else [args.agent]
    if not agents:
        print("no coding agent found on this machine (claude, gemini or codex)")
    checkout = current_project(args.cwd).checkout
    for agent in agents:
        module = agent_module(agent)
        try:
            if args.uninstall:
                lines = module.uninstall(args.scope, checkout)
            else:
                lines = module.install(args.scope, checkout, agent_command())
        except SettingsError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
        for line in lines:
            print(f"{agent}: {line}" if args.all else line)
    return 0


def add_install_command(commands: argparse._SubParsersAction) -> None:
    install = add_command(
        commands,
        "install",
        "add memhub's hooks and MCP server to a coding agent's settings",
        description="Write memhub's hooks and its MCP server (`memhub-agent mcp`, which uses "
        "this machine's login) into the agent's settings: `--scope user` (the default) for "
        "every project, `--scope project` in the checkout's own files for the team to commit "
        "(no token is written). Running it again changes nothing; a file is backed up before "
        "it changes; the rest of the settings stay as they are. `--uninstall` removes exactly "
        "memhub's entries.",
        examples=[
            "install claude-code",
            "install claude-code --scope project",
            "install claude-code --uninstall",
            "install gemini-cli",
            "install codex",
            "install --all",
        ],
        environment="  CLAUDE_CONFIG_DIR                    Claude Code's config home\n"
        "  GEMINI_CLI_HOME                      Gemini CLI's home (its .gemini/ is there)\n"
        "  CODEX_HOME                           Codex CLI's config home (~/.codex)",
        parents=[CWD_OPTION],
    )
    install.add_argument("agent", nargs="?", choices=sorted(AGENTS))
    install.add_argument(
        "--all", action="store_true", help="every agent on this machine (claude, gemini, codex)"
    )
    install.add_argument("--scope", choices=["user", "project"], default="user")
    install.add_argument("--uninstall", action="store_true", help="remove memhub's entries")
    install.set_defaults(func=cmd_install)
