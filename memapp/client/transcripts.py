"""Session transcripts to memhub, and past-context search (docs/design.md §14.3, §14.9, §16).

The `Stop` and `SessionEnd` hooks name the session's transcript. Its entries after the cursor
(a byte offset kept per session in the config dir) are redacted by the fast secret rules, so no
credential they catch leaves the machine, and uploaded in batches under 200 KB. The cursor moves
only after the server has stored a batch, so a failed upload is sent again by the next hook. A
session whose upload failed is also noted as owed (its SessionEnd may be its last hook): the
next Stop or SessionEnd hook, of any session, whose upload memhub takes hands it to a
detached uploader.
A hook has less than a second: it uploads what fits in its budget, then leaves the rest to a
detached `memhub-agent transcript-upload` process and returns. Nothing is printed, ever.
The hook loads what an upload needs and no more: the commands' modules (argparse) and
subprocess are imported where they are used.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import quote, urlencode

from memapp.client.config import config_dir, read_json, write_private
from memapp.client.http import Client, TimedOut
from memapp.memdir.digests import sha256
from memapp.memdir.paths import auto_dream_enabled, load_user_settings
from memapp.memdir.transcripts import read_entries

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

__all__ = ["add_transcript_commands", "upload_from_hook", "upload_transcript"]

SESSION_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")
MARGIN = 0.3  # seconds of the hook's budget a new batch needs (else it is left to a process)
CATCH_UP = 5  # owed sessions a hook hands on at a time
HAND_AGAIN_AFTER = 600  # seconds before an owed session handed on is handed on again
MAX_ATTEMPTS = 5  # uploads of an owed session that failed before it is given up


def valid_session_id(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= 200
        and value[0].isalnum()
        and set(value) <= SESSION_ID_CHARS
    )


class Cursor:
    """How far a session's transcript has been uploaded: a byte offset into one file, where
    the next read seeks to (what was sent before is not read again)."""

    def __init__(self, path: Path, offset: int = 0, inode: int = 0, transcript: str = "") -> None:
        self.path = path
        self.offset = offset
        self.inode = inode
        self.transcript = transcript

    @classmethod
    def load(cls, env: Mapping[str, str] | None, session_id: str, transcript: Path) -> Cursor:
        path = config_dir(env) / "transcripts" / f"{_file_name(session_id)}.json"
        stored = read_json(path) or {}
        try:
            inode = transcript.stat().st_ino
        except OSError:
            inode = 0
        offset = stored.get("offset")
        same = stored.get("inode") == inode and stored.get("transcript") == str(transcript)
        if not same or not isinstance(offset, int) or offset < 0:
            offset = 0  # another file (or none before): the server drops what it already has
        return cls(path, offset, inode, str(transcript))

    def save(self) -> None:
        """Atomic, not durable: the two fsyncs were a fifth of a Stop hook, and a cursor a power
        cut takes back only sends entries again, which the server drops by their uuid."""
        data = {"transcript": self.transcript, "inode": self.inode, "offset": self.offset}
        write_private(self.path, json.dumps(data).encode(), durable=False)

    @contextlib.contextmanager
    def locked(self, wait: bool) -> Iterator[bool]:
        """One uploader per session; yields False (without the lock) when busy and not
        `wait`ing."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path.with_suffix(".lock"), "a") as handle:  # noqa: PTH123 (flock needs the fd)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True


def _file_name(session_id: str) -> str:
    return sha256(session_id.encode()).hexdigest()[:32]


def _owed_path(env: Mapping[str, str] | None, session_id: str) -> Path:
    return config_dir(env) / "transcripts" / "owed" / f"{_file_name(session_id)}.json"


def owe(
    env: Mapping[str, str] | None,
    session_id: str,
    transcript: Path,
    cwd: str,
    final: bool,
    agent: str,
    *,
    retried: bool = False,
) -> None:
    """Note that the session's upload failed, to be handed on by :func:`catch_up`. A hook's
    failure (memhub down) may come any number of times; a handed-on upload that failed
    (`retried`) counts, and a session that failed `MAX_ATTEMPTS` such times is given up."""
    path = _owed_path(env, session_id)
    known = read_json(path) or {}
    attempts = int(known.get("attempts", 0)) + (1 if retried else 0)
    if attempts >= MAX_ATTEMPTS:
        path.unlink(missing_ok=True)
        return
    final = final or bool(known.get("final"))  # a SessionEnd stays owed
    owed = {  # handed_at goes: a failure may be handed on again at the next hook
        "session_id": session_id,
        "transcript": str(transcript),
        "cwd": cwd,
        "final": final,
        "agent": agent,
        "attempts": attempts,
    }
    write_private(path, json.dumps(owed).encode(), durable=False)


def paid(env: Mapping[str, str] | None, session_id: str) -> None:
    _owed_path(env, session_id).unlink(missing_ok=True)


def catch_up(env: Mapping[str, str] | None, current: str) -> None:
    """Hand the sessions owed an upload (but `current`, which its own hook sends) to detached
    uploaders, a few at a time: called once memhub has taken a Stop or SessionEnd hook's
    upload. One handed on is not handed on again for `HAND_AGAIN_AFTER` seconds, while its
    uploader may still be at work."""
    try:
        owed = sorted(_owed_path(env, current).parent.glob("*.json"))
    except OSError:
        return
    handed, now = 0, time.time()
    for path in owed:
        if handed == CATCH_UP:
            break
        data = read_json(path) or {}
        session_id = data.get("session_id")
        if not valid_session_id(session_id) or not isinstance(data.get("transcript"), str):
            path.unlink(missing_ok=True)
            continue
        last = data.get("handed_at")
        if session_id == current or (
            isinstance(last, int | float) and now - last < HAND_AGAIN_AFTER
        ):
            continue
        write_private(path, json.dumps({**data, "handed_at": now}).encode(), durable=False)
        cwd, agent = str(data.get("cwd") or "/"), str(data.get("agent") or "claude-code")
        final = bool(data.get("final"))
        _spawn(str(session_id), Path(data["transcript"]), cwd, final, env, agent)
        handed += 1


def _transcript(value: object, env: Mapping[str, str] | None) -> tuple[Path | None, str]:
    """The transcript's path, or None and why it is not read: it must be a file inside the
    user's home or inside Claude Code's config dir (`CLAUDE_CONFIG_DIR`, often outside home in
    containers and CI), where the client writes it; a hook's input is not to be trusted with
    arbitrary paths."""
    if not isinstance(value, str) or not value:
        return None, "transcript_missing"
    env = env if env is not None else os.environ
    roots = [env.get("HOME") or str(Path.home()), env.get("CLAUDE_CONFIG_DIR") or ""]
    try:
        path = Path(value).resolve(strict=True)
        allowed = [Path(root).resolve() for root in roots if root]
        allowed = [root for root in allowed if root != Path(root.anchor)]  # never all of "/"
    except (OSError, RuntimeError):
        return None, "transcript_missing"
    if not any(path.is_relative_to(root) and path != root for root in allowed):
        return None, "transcript_outside_home"
    if not path.is_file():
        return None, "transcript_missing"
    return path, ""


def upload_transcript(
    client: Client,
    session_id: str,
    cursor: Cursor,
    fields: Mapping[str, Any],
    *,
    final: bool,
    deadline: float | None = None,
    agent: str = "claude-code",
) -> bool:
    """Upload the transcript from the cursor, a batch at a time; True when everything was
    sent, False when the deadline (a `time.monotonic()` value) came first. Another `agent`'s
    lines are converted to Claude Code's entries as they are read (docs/design.md §28)."""
    url = f"/api/v1/sessions/{quote(session_id, safe='')}/entries"
    convert = None
    if agent != "claude-code":  # Claude Code's own lines need no converter (nor its module)
        from memapp.memdir.agent_transcripts import CONVERTERS

        convert = CONVERTERS.get(agent)
    sent = False
    while True:
        if deadline is not None and time.monotonic() > deadline - MARGIN:
            return False
        read = read_entries(cursor.transcript, cursor.offset, convert=convert)
        last = not read.more
        moved = read.offset != cursor.offset
        if not moved and not read.entries and (sent or not final):
            return True
        body = {
            **fields,
            "entries": read.entries,
            "final": final and last,
            "skipped": dict(read.skipped),
        }
        client.post(url, body)
        sent = True
        cursor.offset = read.offset
        cursor.save()
        if last:
            return True


def _spawn(
    session_id: str,
    transcript: Path,
    cwd: str,
    final: bool,
    env: Mapping[str, str] | None,
    agent: str,
) -> None:
    """Leave the rest to a detached process (its own session, no terminal, no output)."""
    import subprocess

    args = [
        sys.executable,
        "-m",
        "memapp.client.cli",
        "transcript-upload",
        "--session-id",
        session_id,
        "--transcript",
        str(transcript),
        "--cwd",
        cwd,
        "--agent",
        agent,
    ]
    if final:
        args.append("--final")
    subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=None if env is None else dict(env),
        cwd="/",
    )


def upload_from_hook(
    payload: Mapping[str, Any],
    client: Client,
    fields: Mapping[str, Any],
    cwd: str,
    env: Mapping[str, str] | None,
    deadline: float,
    *,
    final: bool,
    agent: str = "claude-code",
) -> None:
    """What the Stop (and, with `final`, SessionEnd) hook does: upload what fits in the
    budget, hand a larger backlog to a background process. Raises on network errors (the
    hook stays silent; the cursor has not moved, so the next hook catches up)."""
    if not valid_session_id(payload.get("session_id")):
        return
    session_id = str(payload["session_id"])
    transcript, reason = _transcript(payload.get("transcript_path"), env)
    upload_fields = {**fields, "cwd": cwd, "agent": agent}
    if transcript is None:
        url = f"/api/v1/sessions/{quote(session_id, safe='')}/entries"
        client.post(url, {**upload_fields, "entries": [], "final": final, "skipped": {reason: 1}})
        return
    cursor = Cursor.load(env, session_id, transcript)
    with cursor.locked(wait=False) as mine:
        if not mine:  # a background upload of this session is running; it reads to the end
            if final:  # but was not told the session ended: one that is waits its turn
                _spawn(session_id, transcript, cwd, final, env, agent)
            return
        start = cursor.offset
        try:
            done = upload_transcript(
                client,
                session_id,
                cursor,
                upload_fields,
                final=final,
                deadline=deadline,
                agent=agent,
            )
        except Exception as exc:
            # A batch that ran out of time (the server may be at work on it, or took others
            # before): the rest goes on in the background, which sends that batch again (the
            # server keeps an entry once). Refused, or failed otherwise with nothing through:
            # the next hook tries.
            if cursor.offset == start and not isinstance(exc, TimedOut):
                owe(env, session_id, transcript, cwd, final, agent)
                raise
            done = False
    if not done:
        _spawn(session_id, transcript, cwd, final, env, agent)
        return
    paid(env, session_id)
    if cursor.offset != start or final:  # memhub took an upload: it is back
        catch_up(env, session_id)


# --- commands ---------------------------------------------------------------------------------


def cmd_transcript_upload(args: argparse.Namespace) -> int:
    """The detached uploader: the rest of a large backlog, patiently, silently."""
    from memapp.client.commands import INTERACTIVE, connect, current_project

    transcript = Path(args.transcript)
    if not transcript.is_file():  # gone since: nothing left to send
        paid(None, args.session_id)
        return 0
    try:
        project = current_project(args.cwd)
        settings = load_user_settings(None, project_dir=args.cwd or None)
        fields = {
            **project.fields(),
            "memory_dir": str(project.memory_dir),
            "cwd": args.cwd,
            "auto_dream": auto_dream_enabled(None, settings),
            "agent": args.agent,
        }
        cursor = Cursor.load(None, args.session_id, transcript)
        with cursor.locked(wait=True):
            cursor = Cursor.load(None, args.session_id, transcript)  # the hook may have moved it
            client = connect(timeout=30.0, backoff=INTERACTIVE)
            upload_transcript(
                client, args.session_id, cursor, fields, final=args.final, agent=args.agent
            )
    except Exception:  # memhub still down, or refused it: a later hook hands it on again
        with contextlib.suppress(Exception):
            owe(None, args.session_id, transcript, args.cwd, args.final, args.agent, retried=True)
    else:
        paid(None, args.session_id)
    return 0


def _print_hits(title: str, hits: list[dict]) -> None:
    print(f"{title} ({len(hits)})")
    for n, hit in enumerate(hits, 1):
        where = hit.get("path") or (f"#{hit['seq']}" if hit.get("seq") else "summary")
        when = f", {str(hit['when'])[:16].replace('T', ' ')}" if hit.get("when") else ""
        print(f"  {n}. {hit.get('title')} ({where}{when})")
        print(f"     {' '.join(str(hit.get('snippet', '')).split())}")
        print(f"     {hit.get('url')}")


def cmd_search(args: argparse.Namespace) -> int:
    from memapp.client.commands import EXIT_OK, connect, print_json

    query = urlencode({"q": args.query, "limit": args.limit})
    answer = connect(timeout=args.timeout).get(f"/api/v1/search?{query}")
    if args.json:
        print_json(answer)
        return EXIT_OK
    memories, sessions = answer.get("memories") or [], answer.get("sessions") or []
    if not memories and not sessions:
        print(f"nothing matches {args.query!r}")
        return EXIT_OK
    _print_hits("Memories", memories)
    _print_hits("Sessions", sessions)
    return EXIT_OK


def add_transcript_commands(commands: argparse._SubParsersAction) -> None:
    from memapp.client.commands import JSON_OPTION, TIMEOUT_OPTION, add_command

    search = add_command(
        commands,
        "search",
        "search your past sessions and memories on the server",
        description="Full-text search over your own session transcripts and the memories you "
        "may read, best matches first, each with a highlighted snippet and the link to its "
        "page on the server.",
        examples=[
            'search "deploy friday"',
            'search "flaky integration test" --limit 3',
            'search "release checklist" --json',
        ],
        parents=[JSON_OPTION, TIMEOUT_OPTION],
    )
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10, help="hits of each kind (default 10)")
    search.set_defaults(func=cmd_search)

    # Started by the hooks for a large backlog; not listed.
    upload = commands.add_parser("transcript-upload")
    upload.add_argument("--session-id", required=True)
    upload.add_argument("--transcript", required=True)
    upload.add_argument("--cwd", required=True)
    upload.add_argument("--final", action="store_true")
    upload.add_argument("--agent", default="claude-code")
    upload.set_defaults(func=cmd_transcript_upload)
