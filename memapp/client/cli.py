"""`memhub-agent`: log in to a memhub server, sync a project's private memory, recall, prompt,
and answer Claude Code's hooks.

Exit status: 0 on success, 1 on a failure (reported on stderr), 2 on a usage error. Hooks
always exit 0.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import io
import json
import os
import sys
from collections.abc import Sequence

from memapp.client.commands import (
    INTERACTIVE,
    PROG,
    CommandError,
    connect,
    current_project,
)
from memapp.client.config import Config, config_dir, normalize_url, save_config
from memapp.client.http import ApiError, Unreachable

__all__ = ["main"]


def _read_token(value: str | None) -> str:
    if value == "-":
        return sys.stdin.readline().strip()
    if value is None:
        return getpass.getpass("API token: ").strip()
    return value.strip()


def cmd_login(args: argparse.Namespace) -> int:
    try:
        url = normalize_url(args.url)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    token = _read_token(args.token)
    if not token:
        raise CommandError("no token given")
    config = Config(url, token)
    client = connect(config, timeout=15.0, backoff=INTERACTIVE)
    try:
        answer = client.get("/api/v1/stores/")
    except ApiError as exc:
        if exc.status == 401:
            raise CommandError(f"{url} refused the token: {exc.message}") from None
        raise
    path = save_config(config)
    stores = answer.get("stores", []) if isinstance(answer, dict) else []
    print(f"logged in to {url} ({len(stores)} stores visible); saved to {path}")
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    from memapp.client.sync import SyncBusy, sync_project

    project = current_project(args.cwd)
    try:
        report = sync_project(
            connect(),
            project,
            config_dir() / "sync",
            dry_run=args.dry_run,
            progress=not args.quiet,
        )
    except SyncBusy as exc:
        raise CommandError(str(exc)) from None
    for line in report.details():
        print(line, file=sys.stderr)
    if args.dry_run:
        for action in report.planned:
            note = f" (conflict: {action.conflict})" if action.conflict else ""
            print(f"would {action.kind.replace('_', ' ')} {action.key}{note}")
        print(f"dry run: {len(report.planned)} changes for {project.memory_dir}")
        if report.new_store:
            print("the server has no store for this project yet: a sync creates it")
        return 0
    print(report.summary())
    return 1 if report.errors else 0


def _recall_body(args: argparse.Namespace) -> dict:
    project = current_project(args.cwd)
    tools = [name.strip() for name in (args.tools or "").split(",") if name.strip()]
    body = {
        **project.fields(),
        "query": args.query,
        "recent_tools": tools,
        "already_surfaced": [],
        "scope": args.scope,
        "memory_dir": str(project.memory_dir),
    }
    if args.session:
        body["session_id"] = args.session
    return body


def cmd_recall(args: argparse.Namespace) -> int:
    answer = connect(backoff=INTERACTIVE).post("/api/v1/recall", _recall_body(args))
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    elif answer.get("rendered"):
        print(answer["rendered"])
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    project = current_project(args.cwd)
    body = {**project.fields(), "memory_dir": str(project.memory_dir)}
    answer = connect(backoff=INTERACTIVE).post("/api/v1/prompt", body)
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    elif answer.get("text"):
        print(answer["text"])
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from memapp.client.hooks import run_hook

    finished = run_hook(args.event, sys.stdin, sys.stdout)
    if not finished:
        # The worker is stuck on the network or stdin: leave without waiting for it.
        sys.stdout.flush()
        os._exit(0)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Use a memhub server as your coding agent's memory."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    login = commands.add_parser("login", help="store the server URL and an API token")
    login.add_argument("url", metavar="URL", help="the memhub server, e.g. https://memhub.example")
    login.add_argument(
        "--token", help="an API token (mh_…); `-` reads it from stdin; asked for when omitted"
    )
    login.set_defaults(func=cmd_login)

    sync = commands.add_parser("sync", help="two-way sync of the project's private memory")
    sync.add_argument(
        "--dry-run", action="store_true", help="show what would change, change nothing"
    )
    sync.add_argument("--cwd", help="a directory of the project (default: the current one)")
    sync.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    sync.set_defaults(func=cmd_sync)

    recall = commands.add_parser("recall", help="memories relevant to a query")
    recall.add_argument("query")
    recall.add_argument("--tools", help="recently used tools, comma-separated (e.g. Grep,Bash)")
    recall.add_argument("--scope", choices=["private", "team", "both"], default="both")
    recall.add_argument("--session", help="a session id (per-session budget)")
    recall.add_argument("--json", action="store_true", help="the whole answer as JSON")
    recall.add_argument("--cwd", help="a directory of the project (default: the current one)")
    recall.set_defaults(func=cmd_recall)

    prompt = commands.add_parser("prompt", help="the memory section of the system prompt")
    prompt.add_argument("--json", action="store_true", help="the whole answer as JSON")
    prompt.add_argument("--cwd", help="a directory of the project (default: the current one)")
    prompt.set_defaults(func=cmd_prompt)

    hook = commands.add_parser("hook", help="answer a coding agent's hook (JSON on stdin)")
    hook.add_argument("agent", choices=["claude-code"])
    hook.add_argument(
        "event", choices=["session-start", "user-prompt-submit", "stop", "session-end"]
    )
    hook.set_defaults(func=cmd_hook)

    from memapp.client.snapshot_commands import add_snapshot_commands

    add_snapshot_commands(commands)

    from memapp.client.team import add_team_commands

    add_team_commands(commands)

    from memapp.client.transcripts import add_transcript_commands

    add_transcript_commands(commands)
    return parser


def _hook_main(argv: Sequence[str]) -> int:
    """A hook never fails the agent: a usage error, like any other, is silence and exit 0
    (Claude Code reads exit status 2 from a UserPromptSubmit hook as "block this prompt")."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            args = _parser().parse_args(argv)
    except SystemExit:
        return 0
    try:
        return cmd_hook(args)
    except Exception:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["hook"]:
        return _hook_main(argv)
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
    except ApiError as exc:
        print(f"{PROG}: the server refused the request: {exc}", file=sys.stderr)
    except Unreachable as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
