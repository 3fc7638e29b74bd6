"""`memhub-agent team sync [--watch]`: sync the project's team directory with its team memory
on memhub (docs/design.md §10), once or until stopped. The engine is `memapp.client.team`."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from memapp.client.commands import (
    CWD_OPTION,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_SERVER,
    LOGIN_ENVIRONMENT,
    PROJECT_ENVIRONMENT,
    TIMEOUT_OPTION,
    CommandError,
    add_command,
    connect,
    current_project,
)
from memapp.client.config import config_dir
from memapp.client.http import DEFAULT_BACKOFF, ApiError, Unreachable
from memapp.client.team import (
    DEBOUNCE_SECONDS,
    POLL_SECONDS,
    UNREACHABLE_PROJECT,
    TeamBusy,
    TeamReport,
    TeamSync,
    team_dir_stats,
)
from memapp.memdir.paths import auto_memory_enabled, load_user_settings, repo_slug_for

__all__ = ["add_team_commands"]


def _print_report(report: TeamReport) -> None:
    for line in report.details():
        print(line, file=sys.stderr, flush=True)
    print(report.summary(), flush=True)


def _watch(sync: TeamSync, interval: float) -> int:
    """Push 2 s after the last local change, pull every `interval` seconds, until SIGTERM or
    SIGINT; a run that changed nothing prints nothing."""
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    seen = team_dir_stats(sync.team_dir)
    changed_at: float | None = None
    next_pull = time.monotonic() + interval
    while not stop:
        time.sleep(POLL_SECONDS)
        now = time.monotonic()
        current = team_dir_stats(sync.team_dir)
        if current != seen:
            seen, changed_at = current, now
        due_push = changed_at is not None and now - changed_at >= DEBOUNCE_SECONDS
        if not (due_push or now >= next_pull):
            continue
        # Taken before the run, so an edit made during it still counts as a change (the
        # run's own writes then count too, but pushing them finds nothing to send).
        seen, changed_at = team_dir_stats(sync.team_dir), None
        try:
            report = sync.run(pull=now >= next_pull, push=True)
        except (ApiError, Unreachable) as exc:
            print(f"memhub-agent: team sync failed: {exc}", file=sys.stderr, flush=True)
        else:
            if report.pulled or report.pushed or report.details():
                _print_report(report)
        if now >= next_pull:
            next_pull = time.monotonic() + interval
    return 0


def cmd_team_sync(args: argparse.Namespace) -> int:
    where = Path(args.cwd or Path.cwd())
    if not auto_memory_enabled(None, load_user_settings(None, project_dir=where)):
        # Memory off means off: Claude Code's own client syncs no team memory then either.
        raise CommandError(
            "auto memory is off here (autoMemoryEnabled: false, or "
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY): team memory is not synced"
        )
    project = current_project(args.cwd)
    repo = repo_slug_for(Path(args.cwd or Path.cwd()))
    if repo is None:
        raise CommandError(
            "team memory needs a git checkout whose origin names an owner/repo "
            "(e.g. git@github.com:owner/repo.git)"
        )
    client = connect(timeout=args.timeout, backoff=DEFAULT_BACKOFF)
    sync = TeamSync(client, repo, project.memory_dir / "team", config_dir() / "team")
    try:
        with sync.locked():
            report = sync.run()
            _print_report(report)
            if args.watch:
                return _watch(sync, args.interval)
    except TeamBusy as exc:
        raise CommandError(str(exc)) from None
    except ApiError as exc:
        if exc.status == 404 and exc.code in UNREACHABLE_PROJECT:
            raise CommandError(exc.message, EXIT_SERVER) from None
        if exc.status == 404:  # a server that does not say why
            raise CommandError(
                f"memhub has no team memory for {repo} that you can write", EXIT_SERVER
            ) from None
        raise
    partial = report.errors or report.secrets or report.held or report.conflicts or report.skipped
    return EXIT_PARTIAL if partial else EXIT_OK


def add_team_commands(commands: argparse._SubParsersAction) -> None:
    team = commands.add_parser(
        "team",
        help="the project's team memory (team memory protocol)",
        description="The project's team memory, through the team memory protocol. "
        "`memhub-agent team sync --help` for details.",
    )
    actions = team.add_subparsers(dest="team_command", required=True, metavar="ACTION")
    sync = add_command(
        actions,
        "sync",
        "pull, then push the team directory",
        description="Pull the project's team memory into <memory dir>/team/, then push what "
        "changed here, as Claude Code's own team memory client does. The project is the git "
        "checkout's origin (owner/repo). Files the secret rules flag are never sent.",
        examples=["team sync", "team sync --watch", "team sync --watch --interval 30"],
        environment=f"{PROJECT_ENVIRONMENT}\n{LOGIN_ENVIRONMENT}",
        parents=[TIMEOUT_OPTION, CWD_OPTION],
    )
    sync.add_argument("--watch", action="store_true", help="keep running: push 2 s after changes")
    sync.add_argument(
        "--interval",
        type=float,
        default=60.0,
        help="with --watch, seconds between pulls (default 60)",
    )
    sync.set_defaults(func=cmd_team_sync)
