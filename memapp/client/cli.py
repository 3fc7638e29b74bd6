"""`memhub-agent`: log in to a memhub server, sync a project's memory, recall, prompt, search
past sessions, and answer Claude Code's hooks.

Every group of sub-commands is one line of `COMMANDS`, which names the commands it adds (a new
command goes into its group's tuple too). Failures are reported on stderr in
one sentence (on stdout as JSON with `--json`) with an exit status by class (`EXIT_STATUSES`
in `memapp.client.commands`). Hooks never fail: they print nothing and exit 0.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:  # argparse is loaded by the commands, not by a hook (`main`'s hot path)
    import argparse
    from typing import Any, NoReturn

__all__ = ["COMMANDS", "main"]

# Where each group of sub-commands is added to the parser (`module:function`) and the commands
# it adds, in the order `--help` lists them. A command loads only its own group's module.
COMMANDS = {
    "memapp.client.account:add_account_commands": ("login", "status", "logout"),
    "memapp.client.memory_commands:add_memory_commands": (
        "sync",
        "recall",
        "consolidate",
        "prompt",
    ),
    "memapp.client.daily_logs:add_log_commands": ("log",),
    "memapp.client.team_commands:add_team_commands": ("team",),
    "memapp.client.snapshot_commands:add_snapshot_commands": ("snapshot",),
    "memapp.client.transcripts:add_transcript_commands": ("search", "transcript-upload"),
    "memapp.client.cli:add_hook_command": ("hook",),
    "memapp.client.mcp_stdio:add_mcp_command": ("mcp",),
    "memapp.client.install:add_install_command": ("install",),
    "memapp.client.doctor:add_doctor_command": ("doctor",),
}
HOOK_AGENTS = ("claude-code", "gemini-cli", "codex")
HOOK_ENVIRONMENT = """\
  MEMHUB_HOOK_TIMEOUT                  seconds a hook may take (default 0.7)
  CLAUDE_CODE_DISABLE_AUTO_MEMORY      true: memory is off and every hook is silent, as
  CLAUDE_CODE_SIMPLE                   when this is set, or CLAUDE_CODE_REMOTE is set with
  CLAUDE_CODE_REMOTE                   no memory dir (as Claude Code reads them)"""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    for distribution in ("memhub-agent", "memhub"):  # the site's wheel, or memhub itself
        try:
            return package_version(distribution)
        except PackageNotFoundError:
            continue
    return "unknown"


def cmd_hook(args: argparse.Namespace) -> int:
    return _run_hook(args.agent, args.event)


def _run_hook(agent: str, event: str) -> NoReturn:
    from memapp.client.hooks import run_hook

    run_hook(event, sys.stdin, sys.stdout, agent=agent)
    # Leave at once: the answer is out and every file closed (a worker still stuck on the
    # network or stdin is not waited for). Tearing down the interpreter's modules would be
    # a quarter of what the hook adds to Python's own start (docs/scaling.md).
    with contextlib.suppress(OSError):  # the agent stopped reading: a hook still exits 0
        sys.stdout.flush()
    os._exit(0)


def add_hook_command(commands: argparse._SubParsersAction) -> None:
    from memapp.client.commands import LOGIN_ENVIRONMENT, PROJECT_ENVIRONMENT, add_command
    from memapp.client.hooks import AGENT_HOOKS

    hook = add_command(
        commands,
        "hook",
        "answer a coding agent's hook (JSON on stdin)",
        description="Answer one hook of a coding agent: JSON in on stdin, JSON out on stdout "
        "for the agent to add to its context. It answers within a second and prints nothing, "
        "with exit status 0 whatever happens, when it cannot help (memory off, not logged in, "
        "the server slow or down). `memhub-agent install AGENT` registers it (see the README).",
        examples=[
            f"hook {agent} {event} < input.json"
            for agent, events in AGENT_HOOKS.items()
            for event in events
        ],
        environment=f"{HOOK_ENVIRONMENT}\n{PROJECT_ENVIRONMENT}\n{LOGIN_ENVIRONMENT}",
    )
    hook.add_argument("agent", choices=HOOK_AGENTS)
    hook.add_argument(
        "event", choices=sorted({e for events in AGENT_HOOKS.values() for e in events})
    )
    hook.set_defaults(func=cmd_hook)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `command` alone (its group's module is the only one imported), or of
    every command when it is None or not one of them (`--help`, a typo: argparse lists all)."""
    import argparse
    import importlib

    from memapp.client.commands import EXIT_STATUSES, LOGIN_ENVIRONMENT, PROG

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Use a memhub server as your coding agent's memory.",
        epilog=f"`{PROG} COMMAND --help` shows each command's options and examples.\n\n"
        f"environment:\n{LOGIN_ENVIRONMENT}\n\n{EXIT_STATUSES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    class Version(argparse.Action):
        """argparse's `version` action, the version looked up only when asked for (the lookup
        loads importlib.metadata: a third of a command's start without it)."""

        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: Any,
            option_string: str | None = None,
        ) -> NoReturn:
            print(f"{PROG} {version()}")
            parser.exit()

    parser.add_argument(
        "--version",
        action=Version,
        nargs=0,
        default=argparse.SUPPRESS,
        help="show program's version number and exit",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups = [entry for entry, names in COMMANDS.items() if command in names] or COMMANDS
    for entry in groups:
        module, function = entry.split(":")
        getattr(importlib.import_module(module), function)(commands)
    return parser


def _details(details: Any) -> str:
    """An API error's details in words: `query: This field may not be blank.`"""
    if isinstance(details, dict):
        return "; ".join(f"{key}: {_details(value)}" for key, value in details.items())
    if isinstance(details, list):
        return " ".join(_details(item) for item in details)
    return str(details)


def _failure(exc: Exception) -> tuple[int, str, str]:
    """(exit status, class, one sentence) for a failure of a command."""
    from memapp.client import commands as c
    from memapp.client.http import ApiError, NotMemhub, Unreachable

    if isinstance(exc, c.CommandError):
        return exc.status, c.EXIT_CLASSES[exc.status], str(exc)
    if isinstance(exc, NotMemhub):
        return c.EXIT_UNREACHABLE, "not_memhub", str(exc)
    if isinstance(exc, Unreachable):
        return c.EXIT_UNREACHABLE, "unreachable", str(exc)
    assert isinstance(exc, ApiError)
    if exc.status == 404 and exc.code == "no_project":  # one sentence that says what to do
        return c.EXIT_SERVER, "server", exc.message
    details = _details({k: v for k, v in exc.details.items() if k != "error_code"})
    sentence = f"the server refused the request: {exc.message}"
    sentence += f" ({details})" if details else ""
    sentence += f" [{exc.code}, HTTP {exc.status}]"
    if exc.status in (401, 403):
        return c.EXIT_AUTH, "authentication", sentence
    if exc.status == 400:
        return c.EXIT_USAGE, "usage", sentence
    return c.EXIT_SERVER, "server", sentence


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["hook"] and not {"-h", "--help"} & set(argv):
        # The hot path: no parser, so a hook loads only what its event needs. A usage error
        # is silence and exit 0 like any other (Claude Code reads exit status 2 from a
        # UserPromptSubmit hook as "block this prompt").
        if len(argv) == 3 and argv[1] in HOOK_AGENTS:
            return _run_hook(argv[1], argv[2])
        return 0
    args = _parser(argv[0] if argv else None).parse_args(argv)
    from memapp.client.commands import PROG, CommandError
    from memapp.client.http import ApiError, Unreachable

    try:
        return args.func(args)
    except (CommandError, ApiError, Unreachable) as exc:
        status, kind, sentence = _failure(exc)
    if getattr(args, "json", False):
        from memapp.client.commands import print_json

        print_json({"error": {"class": kind, "message": sentence, "exit_status": status}})
    else:
        print(f"{PROG}: {sentence}", file=sys.stderr)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
