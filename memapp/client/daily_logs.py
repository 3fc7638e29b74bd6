"""Daily logs from the agent's side (docs/design.md §14.8): `memhub-agent log "…"` appends an
entry to today's log, and `memhub-agent sync` brings the logs of both sides together.

An entry is checked here first (one line, at most 4 KB, no secret by the fast rules), so a
refused line never leaves the machine. It is sent with the local date and time; the local copy
of the log then gets whatever the server's copy of that day holds and it lacks (the new entry,
and entries other machines sent). When memhub cannot be reached the entry is kept in the local
log, and the next sync sends it: nothing written is lost.

Logs are only ever appended to, so syncing one is a merge: each side gets the lines it lacks,
counted as a multiset. A line the fast rules refuse stays local and is reported.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass, field
from pathlib import Path

from memapp.client.commands import (
    CWD_OPTION,
    INTERACTIVE,
    LOGIN_ENVIRONMENT,
    PROJECT_ENVIRONMENT,
    CommandError,
    add_command,
    connect,
    current_project,
)
from memapp.client.http import ApiError, Client, Unreachable
from memapp.client.project import Project
from memapp.client.sync import private_store_id
from memapp.memdir.daily_logs import (
    LogLineRejected,
    append_to_log,
    check_log_line,
    daily_log_path,
    format_log_line,
    list_logs,
    log_day,
    missing_lines,
)
from memapp.memdir.frontmatter import MEMORY_TYPES
from memapp.memdir.store_files import checksum

__all__ = ["LogSyncReport", "add_log_commands", "cmd_log", "sync_daily_logs"]


def _local(memory_dir: Path, key: str) -> bytes:
    try:
        return (memory_dir / key).read_bytes()
    except FileNotFoundError:
        return b""


def _take_missing(client: Client, store: int, day: str, memory_dir: Path, key: str) -> int:
    """Append to the local copy of a log the lines the server's copy holds and it lacks."""
    server = client.get(f"/api/v1/stores/{store}/logs/{day}").need("content", str)
    local = _local(memory_dir, key).decode("utf-8", "replace")
    missing = missing_lines(local, server)
    if missing:
        append_to_log(memory_dir, key, missing)
    return len(missing)


def cmd_log(args: argparse.Namespace) -> int:
    project = current_project(args.cwd)
    text = " ".join(args.text)
    now = datetime.datetime.now()  # the agent's local date and time, as the log is named
    try:
        line = format_log_line(text, f"{now:%H:%M}", args.type)
        check_log_line(line)
    except LogLineRejected as exc:
        raise CommandError(f"not logged: {exc}") from None
    key = daily_log_path(now.date())
    body = {
        **project.fields(),
        "text": text,
        "date": now.date().isoformat(),
        "time": f"{now:%H:%M}",
        "type": args.type or "",
    }
    project.memory_dir.mkdir(parents=True, exist_ok=True)
    client = connect(backoff=INTERACTIVE)
    try:
        answer = client.post("/api/v1/logs", body)
        logged, store, said = answer.need("checksum", str), answer["store"], answer["line"]
    except Unreachable as exc:  # not memhub's answer either: the entry is kept here all the same
        append_to_log(project.memory_dir, key, [line])
        print(
            f"memhub cannot be reached ({exc}): kept in {project.memory_dir / key}; "
            "`memhub-agent sync` sends it later",
            file=sys.stderr,
        )
        return 0
    except ApiError as exc:
        raise CommandError(f"not logged: {exc.message}") from None
    if checksum(_local(project.memory_dir, key)) != logged:
        try:
            _take_missing(client, store, now.date().isoformat(), project.memory_dir, key)
        except (ApiError, Unreachable):
            append_to_log(project.memory_dir, key, [line])  # at least this entry, here too
    print(f"logged to {key}: {said}")
    return 0


@dataclass
class LogSyncReport:
    """What a sync of the daily logs did (or, in a dry run, would do)."""

    sent: int = 0
    received: int = 0
    days: int = 0
    refused: list[str] = field(default_factory=list)  # one line per refused entry, for a person

    def summary(self) -> str:
        return (
            f"daily logs: sent {self.sent} entries, received {self.received}, "
            f"across {self.days} days"
            + (f"; {len(self.refused)} kept here (refused)" if self.refused else "")
        )


def _sendable(key: str, lines: list[str], report: LogSyncReport) -> list[str]:
    kept = []
    for line in lines:
        try:
            check_log_line(line)
        except LogLineRejected as exc:
            report.refused.append(f"{key}: {exc}")
            continue
        kept.append(line)
    return kept


def sync_daily_logs(
    client: Client, project: Project, *, dry_run: bool = False, store_id: int | None = None
) -> LogSyncReport:
    """Bring the daily logs of the local memory dir and the server's store together: every
    day's log ends up holding every line either side had (lines the fast rules refuse stay
    local and are reported). A dry run changes nothing on either side. `store_id`, when the
    memory sync just resolved it, saves asking the server again."""
    report = LogSyncReport()
    memory_dir = project.memory_dir
    local = {key: _local(memory_dir, key) for key, _ in list_logs(memory_dir)}
    store = store_id
    if store is None:
        store = private_store_id(client, project, create=not dry_run and bool(local))
    remote = {}
    if store is not None:
        listing = client.get(f"/api/v1/stores/{store}/logs/").need("logs", list)
        remote = {item["key"]: item["checksum"] for item in listing if log_day(item["key"])}
    for key in sorted(set(local) | set(remote)):
        data = local.get(key, b"")
        if checksum(data) == remote.get(key):
            continue
        day = log_day(key).isoformat()  # type: ignore[union-attr]
        server = (
            client.get(f"/api/v1/stores/{store}/logs/{day}").need("content", str)
            if key in remote
            else ""
        )
        mine = data.decode("utf-8", "replace")
        to_send = _sendable(key, missing_lines(server, mine), report)
        to_take = missing_lines(mine, server)
        if not (to_send or to_take):
            continue
        report.days += 1
        report.sent += len(to_send)
        report.received += len(to_take)
        if dry_run:
            continue
        if to_send:
            client.post(f"/api/v1/stores/{store}/logs/{day}", {"lines": to_send})
        if to_take:
            append_to_log(memory_dir, key, to_take)
    return report


def add_log_commands(commands: argparse._SubParsersAction) -> None:
    log = add_command(
        commands,
        "log",
        "append an entry to today's daily log",
        description="Append one entry to today's daily log of the project's private memory "
        "(logs/YYYY/MM/YYYY-MM-DD.md, your local date), here and on memhub. An entry over 4 KB, "
        "of more than one line or holding a secret is refused with the reason and sent nowhere; "
        "when memhub cannot be reached the entry is kept here and `sync` sends it later.",
        examples=[
            'log "Deploys go out on Fridays"',
            'log --type feedback "Never mock the database. Why: mocks hid a broken migration."',
        ],
        environment=f"{PROJECT_ENVIRONMENT}\n{LOGIN_ENVIRONMENT}",
        parents=[CWD_OPTION],
    )
    log.add_argument("text", nargs="+", help="the entry: one line, at most 4 KB")
    log.add_argument("--type", choices=MEMORY_TYPES, help="user, feedback, project or reference")
    log.set_defaults(func=cmd_log)
