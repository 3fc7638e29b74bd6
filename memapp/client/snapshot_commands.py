"""`memhub-agent snapshot push|apply|publish <agent type>`: agent memory snapshots
(docs/design.md §13).

- `push` uploads this checkout's snapshot of the agent and the agent's memory dirs (user scope,
  and project and local scope when they exist) so a person can review the update in memhub.
  Files holding a secret are skipped and reported, never sent.
- `apply` fetches the decisions made in memhub and carries them out here, with the core's
  actions: only the snapshot version that was reviewed, only files whose content is what was
  approved. It then pushes again, so memhub sees the result.
- `publish` writes a new snapshot of the agent's memory into this checkout (`updatedAt` = now),
  refusing if the secret filter finds anything. Commit it to share it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from urllib.parse import quote

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
from memapp.client.http import ApiError, Client
from memapp.memdir.agent_snapshots import (
    MARKER_FILENAME,
    MAX_SNAPSHOT_FILE_BYTES,
    SnapshotActionResult,
    SnapshotError,
    initialize_from_snapshot,
    keep_local,
    merge_from_snapshot,
    publish_snapshot,
    read_marker,
    replace_from_snapshot,
    snapshot_dir,
)
from memapp.memdir.paths import agent_memory_dir
from memapp.memdir.secret_rules import scan_text

__all__ = ["add_snapshot_commands"]

SCOPES = ("user", "project", "local")


def repo_root(cwd: str | os.PathLike[str]) -> Path:
    """The checkout containing `cwd`: the nearest directory with a `.git` entry, else `cwd`.

    Not the canonical root: a worktree holds its own `.claude/` files.
    """
    start = Path(os.path.normpath(Path(cwd).absolute()))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def _agent_dirs(repo: Path, agent_type: str) -> tuple[Path, dict[str, Path]]:
    try:
        snapshot = snapshot_dir(repo, agent_type)
        dirs = {
            "user": agent_memory_dir(agent_type, "user"),
            "project": agent_memory_dir(agent_type, "project", repo=repo),
            "local": agent_memory_dir(agent_type, "local", repo=repo),
        }
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    return snapshot, dirs


def _collect(directory: Path, skipped: list[str], label: str) -> dict[str, str] | None:
    """The top-level files of a directory as text (None if it does not exist). Hidden files
    other than the sync marker are left out; files that are not UTF-8, too large or hold a
    secret are skipped, with the reason appended to `skipped` (never the secret)."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return None
    files = {}
    for entry in entries:
        if not entry.is_file(follow_symlinks=False):
            continue
        if entry.name.startswith(".") and entry.name != MARKER_FILENAME:
            continue
        where = f"{label}/{entry.name}"
        try:
            data = Path(entry.path).read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            skipped.append(f"{where}: not readable as UTF-8 text")
            continue
        if len(data) > MAX_SNAPSHOT_FILE_BYTES:
            skipped.append(f"{where}: over {MAX_SNAPSHOT_FILE_BYTES:,} bytes")
            continue
        hits = scan_text(text)
        if hits:
            skipped.extend(f"{where}: {hit} — not sent" for hit in hits)
            continue
        files[entry.name] = text
    return files


def _api_path(project_ref: str, agent_type: str) -> str:
    project, agent = quote(project_ref, safe=""), quote(agent_type, safe="")
    return f"/api/v1/projects/{project}/agents/{agent}/snapshot"


def _push(client: Client, cwd: str | None, agent_type: str) -> tuple[dict, list[str]]:
    project = current_project(cwd)
    snapshot, dirs = _agent_dirs(repo_root(cwd or Path.cwd()), agent_type)
    skipped: list[str] = []
    body = {
        "project_dirname": project.dirname,
        "snapshot": _collect(snapshot, skipped, "snapshot"),
        "scopes": {scope: _collect(path, skipped, scope) for scope, path in dirs.items()},
    }
    answer = client.request("PUT", _api_path(project.ref, snapshot.name), body)
    return answer, skipped


def _describe(scope: dict) -> str:
    status = scope["status"].replace("_", " ")
    if scope["status"] == "none":
        status = "in sync" if scope.get("synced_from") else f"nothing to do ({scope['reason']})"
    return f"{scope['scope']}: {status}"


def cmd_push(args: argparse.Namespace) -> int:
    answer, skipped = _push(connect(timeout=args.timeout), args.cwd, args.agent)
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    print(f"pushed {answer['agent_type']} of {answer['project']}")
    for scope in answer["scopes"]:
        line = _describe(scope)
        if scope["status"] != "none" and scope["decision"] is None:
            line += f" — review it at {scope['review_url']}"
        print(line)
    return 0


def _carry_out(decision: dict, snapshot: Path, memory_dir: Path) -> SnapshotActionResult:
    kind, stamp, files = decision["decision"], decision["updated_at"], decision["files"]
    if kind == "initialize":
        return initialize_from_snapshot(snapshot, memory_dir, updated_at=stamp, expected=files)
    if kind == "merge":
        return merge_from_snapshot(snapshot, memory_dir, files, updated_at=stamp, expected=files)
    if kind == "keep":
        return keep_local(snapshot, memory_dir, updated_at=stamp)
    if kind == "replace":
        return replace_from_snapshot(snapshot, memory_dir, updated_at=stamp, expected=files)
    raise CommandError(f"unknown decision {kind!r}", EXIT_SERVER)


def cmd_apply(args: argparse.Namespace) -> int:
    client = connect(timeout=args.timeout)
    project = current_project(args.cwd)
    snapshot, dirs = _agent_dirs(repo_root(args.cwd or Path.cwd()), args.agent)
    try:
        answer = client.get(_api_path(project.ref, snapshot.name) + "?origin=upload")
    except ApiError as exc:
        if exc.status != 404:
            raise
        raise CommandError(
            f"memhub has nothing of {project.ref} from this machine yet: run "
            f"`memhub-agent snapshot push {args.agent}` first",
            EXIT_SERVER,
        ) from None
    applied = failed = 0
    for scope in answer["scopes"]:
        name, decision = scope["scope"], scope["decision"]
        memory_dir = dirs.get(name)
        if decision is None:
            if scope["status"] == "none":
                print(_describe(scope))
            else:
                print(f"{name}: waiting for a decision — review it at {scope['review_url']}")
            continue
        if decision["decision"] == "dismiss":
            print(f"{name}: dismissed for now")
            continue
        if memory_dir is None or read_marker(memory_dir).updated_at == decision["updated_at"]:
            print(f"{name}: {decision['decision']} already applied")
            continue
        try:
            result = _carry_out(decision, snapshot, memory_dir)
        except (SnapshotError, ValueError, OSError) as exc:
            print(f"{name}: not applied: {exc}", file=sys.stderr)
            failed += 1
            continue
        applied += 1
        print(
            f"{name}: {decision['decision']} applied from the snapshot of {result.updated_at} "
            f"({len(result.written)} written, {len(result.removed)} removed)"
        )
        for refusal in result.refused:
            print(f"{name}: refused {refusal.name}: {refusal.reason}", file=sys.stderr)
    if applied:
        _push(client, args.cwd, args.agent)  # so memhub sees what was done
    return EXIT_PARTIAL if failed else EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    repo = repo_root(args.cwd or Path.cwd())
    snapshot, dirs = _agent_dirs(repo, args.agent)
    try:
        result = publish_snapshot(dirs[args.scope], snapshot)
    except SnapshotError as exc:
        hits = getattr(exc, "hits", None)
        if hits:
            for name, hit in hits:
                print(f"{name}: {hit}", file=sys.stderr)
            raise CommandError(
                "the secret filter found secrets: nothing published", EXIT_PARTIAL
            ) from None
        raise CommandError(str(exc)) from None
    for refusal in result.refused:
        print(f"skipped {refusal.name}: {refusal.reason}", file=sys.stderr)
    print(
        f"published {len(result.written) + len(result.unchanged)} files of {args.agent} "
        f"({args.scope} scope) to {snapshot.relative_to(repo)} as {result.updated_at}; "
        "commit it to share it"
    )
    return 0


EXAMPLES = {
    "push": ["snapshot push code-reviewer"],
    "apply": ["snapshot apply code-reviewer"],
    "publish": ["snapshot publish code-reviewer", "snapshot publish code-reviewer --scope project"],
}
DESCRIPTIONS = {
    "push": "Upload this checkout's snapshot of an agent and the agent's memory dirs (user "
    "scope, and project and local scope when they exist) for review in memhub. Files holding a "
    "secret are skipped and reported, never sent.",
    "apply": "Carry out here the decisions made in memhub: only the snapshot version that was "
    "reviewed, only files whose content is what was approved; then push again so memhub sees "
    "the result.",
    "publish": "Write a new snapshot of the agent's memory into this checkout (updatedAt = "
    "now), refused when the secret filter finds anything. Commit it to share it.",
}


def add_snapshot_commands(commands: argparse._SubParsersAction) -> None:
    """`snapshot push|apply|publish`, added to the `memhub-agent` parser."""
    snapshot = commands.add_parser(
        "snapshot",
        help="agent memory snapshots: push, apply, publish",
        description="Agent memory snapshots (docs/design.md §13): `push` for review, `apply` "
        "what was decided, `publish` a new one. `memhub-agent snapshot ACTION --help` for each.",
    )
    actions = snapshot.add_subparsers(dest="snapshot_command", required=True, metavar="ACTION")
    helps = {
        "push": ("upload this checkout's snapshot and the agent's memory for review", cmd_push),
        "apply": ("carry out the decisions made in memhub", cmd_apply),
        "publish": ("write a new snapshot of the agent's memory into this checkout", cmd_publish),
    }
    for name, (text, func) in helps.items():
        action = add_command(
            actions,
            name,
            text,
            description=DESCRIPTIONS[name],
            examples=EXAMPLES[name],
            environment=PROJECT_ENVIRONMENT
            if name == "publish"
            else f"{PROJECT_ENVIRONMENT}\n{LOGIN_ENVIRONMENT}",
            parents=[CWD_OPTION] if name == "publish" else [TIMEOUT_OPTION, CWD_OPTION],
        )
        action.add_argument("agent", metavar="AGENT_TYPE", help="the agent type, e.g. reviewer")
        if name == "publish":
            action.add_argument(
                "--scope", choices=SCOPES, default="user", help="whose memory (default: user)"
            )
        action.set_defaults(func=func)
