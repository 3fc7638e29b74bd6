"""What every `memhub-agent` command shares: its name, its exit statuses, its errors, its common
options, the server and the project.

Sub-command modules import these; none imports the CLI that registers them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memapp.client.config import Config, config_problem, load_config
from memapp.client.http import Backoff, Client
from memapp.client.project import Project, find_project

PROG = "memhub-agent"
# Someone waits on these at the terminal: a few quick retries, not the sync's patient ones.
INTERACTIVE = Backoff(attempts=3)
DEFAULT_TIMEOUT = 20.0  # seconds one answer of the server may take, retries included

# Exit statuses by class, the same for every command (the README and `--help` list them).
EXIT_OK = 0
EXIT_PARTIAL = 1  # finished, but with conflicts or skipped files: look at what it printed
EXIT_USAGE = 2  # wrong arguments, or a request the command cannot make here as asked
EXIT_AUTH = 3  # not logged in, or the server refused the token
EXIT_UNREACHABLE = 4  # no answer from a memhub server: down, timed out, or not memhub
EXIT_SERVER = 5  # the server failed, or refused the request
EXIT_CLASSES = {
    EXIT_OK: "success",
    EXIT_PARTIAL: "partial",
    EXIT_USAGE: "usage",
    EXIT_AUTH: "authentication",
    EXIT_UNREACHABLE: "unreachable",
    EXIT_SERVER: "server",
}

EXIT_STATUSES = f"""\
exit status:
  {EXIT_OK}  success
  {EXIT_PARTIAL}  finished, with conflicts or skipped files (see what it printed)
  {EXIT_USAGE}  usage: wrong arguments, or a request that cannot be made as asked
  {EXIT_AUTH}  authentication: not logged in, or the token was refused
  {EXIT_UNREACHABLE}  server unreachable, timed out, or not a memhub server
  {EXIT_SERVER}  server error: the server failed or refused the request"""

LOGIN_ENVIRONMENT = """\
  MEMHUB_URL                           the server, over the stored login
  MEMHUB_TOKEN                         the API token, over the stored login
  XDG_CONFIG_HOME                      where the login and sync state live
                                       ($XDG_CONFIG_HOME/memhub, else ~/.config/memhub)"""
PROJECT_ENVIRONMENT = """\
  CLAUDE_CONFIG_DIR                    Claude Code's config home (default ~/.claude)
  CLAUDE_CODE_REMOTE_MEMORY_DIR        the memory base, when set
  CLAUDE_COWORK_MEMORY_PATH_OVERRIDE   the memory dir itself, when set"""
NOT_LOGGED_IN = f"not logged in: run `{PROG} login URL --token -` (or set MEMHUB_URL/MEMHUB_TOKEN)"


def not_logged_in() -> str:
    """What a command that needs a login says without one: why the stored one is broken,
    when it is, and how to log in."""
    problem = config_problem()
    return f"{problem}: log in again, `{PROG} login URL --token -`" if problem else NOT_LOGGED_IN


class CommandError(Exception):
    """A failure to report on stderr, with the exit status of its class."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


def _option_parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


# Options several commands share: add them with `parents=[...]`.
JSON_OPTION = _option_parser()
JSON_OPTION.add_argument(
    "--json", action="store_true", help="print the answer as JSON (errors too, on stdout)"
)
TIMEOUT_OPTION = _option_parser()
TIMEOUT_OPTION.add_argument(
    "--timeout",
    type=float,
    default=DEFAULT_TIMEOUT,
    metavar="SECONDS",
    help=f"give up on an answer of the server after this long (default {DEFAULT_TIMEOUT:g})",
)


def _directory(value: str) -> str:
    """A `--cwd` that exists: a mistyped one would name a project no one has (and make it)."""
    if not Path(value).is_dir():
        raise argparse.ArgumentTypeError(f"{value}: no such directory")
    return value


CWD_OPTION = _option_parser()
CWD_OPTION.add_argument(
    "--cwd", type=_directory, help="a directory of the project (default: the current one)"
)


def add_command(
    commands: argparse._SubParsersAction,
    name: str,
    summary: str,
    *,
    description: str,
    examples: Sequence[str],
    environment: str = LOGIN_ENVIRONMENT,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """A sub-command whose help has a description, examples, the environment it reads and the
    exit statuses."""
    epilog = "examples:\n" + "\n".join(f"  {PROG} {example}" for example in examples)
    if environment:
        epilog += f"\n\nenvironment:\n{environment}"
    epilog += f"\n\n{EXIT_STATUSES}"
    return commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        parents=list(parents),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def say_retry(message: str) -> None:
    """Tell the person at the terminal that the server is being tried again."""
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def connect(
    config: Config | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    backoff: Backoff = INTERACTIVE,
) -> Client:
    """A client for the server this machine logged in to (or `config`'s), giving up on any one
    answer after `timeout` seconds, retries included, and saying so when it retries."""
    config = config or load_config()
    if config is None:
        raise CommandError(not_logged_in(), EXIT_AUTH)
    if timeout <= 0:
        raise CommandError("--timeout must be a positive number of seconds")
    return Client(
        config.url,
        config.token,
        timeout=timeout,
        total=timeout,
        backoff=backoff,
        on_retry=say_retry,
    )


def current_project(cwd: str | None) -> Project:
    """The project of `cwd` (default: the current directory), found as the agent finds it."""
    return find_project(cwd or Path.cwd())


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))
