"""`memhub-agent sync`, `recall`, `prompt` and `consolidate`: the project's private memory with
the server."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from memapp.client.commands import (
    CWD_OPTION,
    EXIT_OK,
    EXIT_PARTIAL,
    JSON_OPTION,
    LOGIN_ENVIRONMENT,
    PROJECT_ENVIRONMENT,
    TIMEOUT_OPTION,
    CommandError,
    add_command,
    connect,
    current_project,
    print_json,
)
from memapp.client.config import config_dir
from memapp.client.http import DEFAULT_BACKOFF
from memapp.client.project import Project

if TYPE_CHECKING:
    from memapp.client.daily_logs import LogSyncReport
    from memapp.client.sync import PrivateSyncReport

__all__ = ["add_memory_commands"]

ENVIRONMENT = f"{PROJECT_ENVIRONMENT}\n{LOGIN_ENVIRONMENT}"


def _sync_json(report: PrivateSyncReport, logs: LogSyncReport, dry_run: bool) -> dict[str, Any]:
    return {
        "dry_run": dry_run,
        "uploaded": report.uploaded,
        "downloaded": report.downloaded,
        "deleted_local": report.deleted_local,
        "deleted_remote": report.deleted_remote,
        "conflicts": report.conflicts,
        "skipped": report.secrets,
        "errors": report.errors,
        "planned": [
            {"action": a.kind, "key": a.key, "conflict": a.conflict or None} for a in report.planned
        ],
        "new_store": report.new_store,
        "daily_logs": {
            "sent": logs.sent,
            "received": logs.received,
            "days": logs.days,
            "kept_here": logs.refused,
        },
    }


def cmd_sync(args: argparse.Namespace) -> int:
    from memapp.client.daily_logs import sync_daily_logs
    from memapp.client.sync import sync_project
    from memapp.client.sync_state import SyncBusy

    project = current_project(args.cwd)
    client = connect(timeout=args.timeout, backoff=DEFAULT_BACKOFF)
    try:
        report = sync_project(
            client,
            project,
            config_dir() / "sync",
            dry_run=args.dry_run,
            progress=not (args.quiet or args.json),
            delete_missing=args.delete_missing,
        )
    except SyncBusy as exc:
        raise CommandError(str(exc)) from None
    logs = sync_daily_logs(client, project, dry_run=args.dry_run, store_id=report.store_id)
    partial = report.conflicts or report.secrets or report.errors or logs.refused
    status = EXIT_PARTIAL if partial else EXIT_OK
    if args.json:
        print_json(_sync_json(report, logs, args.dry_run))
        return status
    for line in [*report.details(), *(f"kept here: {line}" for line in logs.refused)]:
        print(line, file=sys.stderr)
    if args.dry_run:
        for action in report.planned:
            note = f" (conflict: {action.conflict})" if action.conflict else ""
            print(f"would {action.kind.replace('_', ' ')} {action.key}{note}")
        print(f"dry run: {len(report.planned)} changes for {project.memory_dir}")
        if logs.days or logs.refused:
            print(f"dry run: {logs.summary()}")
        if report.new_store:
            print("the server has no store for this project yet: a sync creates it")
        return status
    print(report.summary())
    if logs.days or logs.refused:
        print(logs.summary())
    return status


def _agent_fields(project: Project, args: argparse.Namespace) -> dict:
    """The request's fields for `--agent` (none without it); a type that is no single path
    segment is a usage error, not a traceback."""
    if not args.agent:
        return {}
    scope = args.agent_scope or project.agent_scope(args.agent) or "user"
    try:
        memory_dir = project.agent_dir(args.agent, scope)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    return {"agent_type": args.agent, "agent_scope": scope, "memory_dir": str(memory_dir)}


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
    body.update(_agent_fields(project, args))
    if args.session:
        body["session_id"] = args.session
    return body


def cmd_recall(args: argparse.Namespace) -> int:
    answer = connect(timeout=args.timeout).post("/api/v1/recall", _recall_body(args))
    if args.json:
        print_json(answer)
    elif answer.get("rendered"):
        print(answer["rendered"])
    return EXIT_OK


def cmd_prompt(args: argparse.Namespace) -> int:
    project = current_project(args.cwd)
    body = {**project.fields(), "memory_dir": str(project.memory_dir)}
    body.update(_agent_fields(project, args))
    answer = connect(timeout=args.timeout).post("/api/v1/prompt", body)
    if args.json:
        print_json(answer)
    elif answer.get("text"):
        print(answer["text"])
    return EXIT_OK


def cmd_consolidate(args: argparse.Namespace) -> int:
    """ "Consolidate now" for the project's private store (or the team's), or `--cancel` the
    run that waits or runs (docs/design.md §14.2)."""
    project = current_project(args.cwd)
    client = connect(timeout=args.timeout)
    body = {**project.fields(), "scope": args.scope, "create": False}
    store = client.post("/api/v1/stores/resolve", body)
    answer = client.request(
        "DELETE" if args.cancel else "POST", f"/api/v1/stores/{store.need('id', int)}/consolidate"
    )
    if args.json:
        print_json(answer)
        return EXIT_OK
    run = answer["run"]
    print(
        {
            "queued": f"consolidation #{run['id']} queued: the proposals wait for your review",
            "busy": f"consolidation #{run['id']} is already {run['status']}",
            "cancelled": f"consolidation #{run['id']} cancelled before it started",
            "cancelling": f"consolidation #{run['id']} stops at its next step; the lock is put "
            "back as it was",
        }[answer["status"]]
    )
    return EXIT_OK


def _agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent", metavar="AGENT_TYPE", help="an agent's own memory, e.g. code-reviewer"
    )
    parser.add_argument(
        "--agent-scope",
        choices=["user", "project", "local"],
        help="which of the agent's memories (default: the narrowest that exists here)",
    )


def add_memory_commands(commands: argparse._SubParsersAction) -> None:
    sync = add_command(
        commands,
        "sync",
        "two-way sync of the project's private memory",
        description="Sync the project's private memory dir (outside team/ and logs/) with your "
        "private store on the server. A file changed on one side only is copied to the other; "
        "a file changed on both is kept here and the server's version saved beside it "
        "(<name>.remote-<checksum>.md); nothing is lost. Files the secret rules flag are never "
        "uploaded. The daily logs (logs/) are merged: each side gets the lines it lacks.",
        examples=["sync", "sync --dry-run", "sync --json --quiet"],
        environment=ENVIRONMENT,
        parents=[JSON_OPTION, TIMEOUT_OPTION, CWD_OPTION],
    )
    sync.add_argument(
        "--dry-run", action="store_true", help="show what would change, change nothing"
    )
    sync.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    sync.add_argument(
        "--delete-missing",
        action="store_true",
        help="delete on the server every file gone from here, however many (without it, "
        "more than 3, or a quarter of them, or any when the memory dir is missing, wait)",
    )
    sync.set_defaults(func=cmd_sync)

    recall = add_command(
        commands,
        "recall",
        "memories relevant to a query",
        description="Ask the server which memories (at most 5, private and team) fit a query, "
        "and print them as an agent sees them, each with its age.",
        examples=[
            'recall "why are the integration tests slow?" --tools Bash,Grep',
            'recall "deploy checklist" --json',
            'recall "style rules" --agent code-reviewer',
        ],
        environment=ENVIRONMENT,
        parents=[JSON_OPTION, TIMEOUT_OPTION, CWD_OPTION],
    )
    recall.add_argument("query")
    recall.add_argument("--tools", help="recently used tools, comma-separated (e.g. Grep,Bash)")
    recall.add_argument("--scope", choices=["private", "team", "both"], default="both")
    recall.add_argument("--session", help="a session id (per-session budget)")
    _agent_options(recall)
    recall.set_defaults(func=cmd_recall)

    consolidate = add_command(
        commands,
        "consolidate",
        "consolidate the project's memory now, or cancel",
        description="Ask memhub to consolidate the project's private (or team) store now, as "
        'the store page\'s "Consolidate now" does (the time and session gates are skipped; '
        "the result is a proposal to review), or --cancel the run that waits or runs.",
        examples=["consolidate", "consolidate --scope team", "consolidate --cancel"],
        environment=ENVIRONMENT,
        parents=[JSON_OPTION, TIMEOUT_OPTION, CWD_OPTION],
    )
    consolidate.add_argument("--scope", choices=["private", "team"], default="private")
    consolidate.add_argument("--cancel", action="store_true", help="cancel the waiting run")
    consolidate.set_defaults(func=cmd_consolidate)

    prompt = add_command(
        commands,
        "prompt",
        "the memory section of the system prompt",
        description="Print the memory section of an agent's system prompt for this project: "
        "the instructions, then the indexes, in the mode the server's flags choose.",
        examples=["prompt", "prompt --json", "prompt --agent code-reviewer"],
        environment=ENVIRONMENT,
        parents=[JSON_OPTION, TIMEOUT_OPTION, CWD_OPTION],
    )
    _agent_options(prompt)
    prompt.set_defaults(func=cmd_prompt)
