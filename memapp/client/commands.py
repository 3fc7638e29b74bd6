"""What every `memhub-agent` command shares: its name, its error, the server and the project.

Sub-command modules import these; none imports the CLI that registers them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memapp.client.config import Config, load_config
from memapp.client.http import Backoff, Client
from memapp.client.project import Project, find_project

PROG = "memhub-agent"
# Someone waits on these at the terminal: a few quick retries, not the sync's patient ones.
INTERACTIVE = Backoff(attempts=3)
NOT_LOGGED_IN = f"not logged in: run `{PROG} login URL --token -` (or set MEMHUB_URL/MEMHUB_TOKEN)"


class CommandError(Exception):
    """A failure to report on stderr (exit status 1)."""


def connect(config: Config | None = None, **options: Any) -> Client:
    """A client for the server this machine logged in to (or `config`'s)."""
    config = config or load_config()
    if config is None:
        raise CommandError(NOT_LOGGED_IN)
    return Client(config.url, config.token, **options)


def current_project(cwd: str | None) -> Project:
    """The project of `cwd` (default: the current directory), found as the agent finds it."""
    return find_project(cwd or Path.cwd())
