"""What each MCP tool does, as plain synchronous functions of the caller (docs/design.md §27).

They run in the request's own thread (the Django view's), so the ORM, the stores' locks and
every `do_*` write work as they do for the API. A refusal is `ToolError` with a sentence the
model can act on; nothing is written then.
"""

from __future__ import annotations

import datetime
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.urls import reverse
from django.utils import timezone
from mcp.server.mcpserver.exceptions import ToolError

from memapp.api.auth import may_write
from memapp.lifecycle.daily_logs import do_append_daily_log
from memapp.lifecycle.models import Proposal
from memapp.lifecycle.past_context import search_past_context
from memapp.lifecycle.proposals import do_propose_changes
from memapp.memdir.extraction import ProposedChange
from memapp.memdir.freshness import RecalledMemory, render_recalled
from memapp.memdir.frontmatter import parse_memory
from memapp.memdir.index import INDEX_FILENAME
from memapp.memdir.keys import PathTraversalError, validate_key
from memapp.memdir.store_files import FileRejected, check_entry, checksum
from memapp.stores.actions import (
    do_forget_memory,
    do_put_files,
    do_rename_memory,
    index_entry_for,
    store_file_path,
)
from memapp.stores.flags import get_flags
from memapp.stores.models import ApiToken, Store, Via
from memapp.stores.projects import reading_store
from memapp.stores.prompting import assemble_for, team_store_for
from memapp.stores.recall import mark_surfaced, recall_for
from memapp.stores.tokens import scope_allows
from memapp.stores.withheld import (
    as_served,
    flagged_index_message,
    kept_back_message,
    withheld,
)

ROOT = "/memories"  # the memory tool's root (Anthropic's memory_20250818), as agents know it
TEAM = "team"  # the team store's folder under it, as in Claude Code's own memory dir
MAX_VIEW_FILES = 500


@dataclass(frozen=True)
class Caller:
    """Who asks, set by the view for one request: the token's user, the project named by the
    URL's path form ("" when none) and the agent's session (for the recall budget)."""

    user: Any
    token: ApiToken
    project: str = ""
    session_id: str = ""
    site_url: str = ""


CALLER: ContextVar[Caller | None] = ContextVar("memhub_mcp_caller", default=None)


def caller() -> Caller:
    found = CALLER.get()
    if found is None:  # the server is only reachable through the authenticated view
        raise ToolError("Not authenticated.")
    return found


def needs_scope(needed: str) -> None:
    """A write tool's check of the token's scope (docs/design.md §26): the MCP endpoint lets
    every token in, since reading tools are called by POST too."""
    token = caller().token
    if not scope_allows(token.scope, needed):
        raise ToolError(
            f"Token {token.name!r} has the {token.get_scope_display()!r} scope; this call needs "
            f"{ApiToken.Scope(needed).label!r}: nothing was written."
        )


def _needs_scope_for(store: Store) -> None:
    """A write's check of the store it names: team memory takes a team-write token, as the
    REST API asks for any write naming a team store (docs/design.md §26)."""
    if store.kind == Store.Kind.TEAM:
        needs_scope(ApiToken.Scope.TEAM_WRITE)


def _refused(exc: FileRejected) -> ToolError:
    message = str(exc).rstrip(".")
    if "nothing was written" not in message:
        message += ". Nothing was written"
    return ToolError(f"Refused ({exc.code}): {message}.")


def private_store(project: str | None) -> Store:
    """The caller's private store of the project named by the argument or, failing that, by
    the URL, as a read finds it (`reading_store`: made only for a member, or in a new project
    when the token may write); `ToolError` when neither names one the caller can reach."""
    who = caller()
    ref = (project or "").strip() or who.project
    if not ref:
        raise ToolError(
            "Which project? Pass `project` (the repository's owner/name) or connect to "
            "/mcp/<owner>/<repo>/."
        )
    store = reading_store(who.user, ref, new_project=may_write(who.token))
    if store is None:
        raise ToolError(f"No project {ref!r} that you can use.")
    return store


# recall and search -------------------------------------------------------------------------


def recall(
    query: str,
    recent_tools: list[str],
    already_surfaced: list[str],
    project: str | None,
    session_id: str | None,
) -> str:
    who = caller()
    private = private_store(project)
    outcome = recall_for(
        who.user,
        private,
        query,
        recent_tools=tuple(recent_tools),
        already_surfaced=tuple(already_surfaced),
        memory_dir=ROOT,
        session_id=session_id or who.session_id or None,
    )
    if outcome.selector == "disabled":
        return "Recall is turned off for this project."
    memories = [RecalledMemory(m["path"], m["mtime_ms"], m["content"]) for m in outcome.memories]
    return render_recalled(memories, wrap=False) or "No saved memory fits this query."


def search(query: str, limit: int) -> str:
    who = caller()
    result = search_past_context(who.user, query, limit, for_agent=True)
    if result.empty:
        return f"Nothing in your memories or past sessions matches {query!r}."
    lines = []
    if result.memories:
        lines.append("Memories:")
        lines += [
            f"- {hit.title} (store {hit.store_id}, {hit.path}): {hit.snippet_text}"
            for hit in result.memories
        ]
    if result.sessions:
        lines.append("Past sessions:")
        lines += [
            f"- session {hit.agent_session_id}, entry {hit.seq}"
            f"{f' ({hit.when:%Y-%m-%d %H:%M})' if hit.when else ''}: {hit.snippet_text}"
            for hit in result.sessions
        ]
    return "\n".join(lines)


# the memory tool ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    store: Store
    key: str  # the key in the store ("" for its root)
    shown: str  # the path as the agent names it


def _target(path: str | None, project: str | None, *, file: bool = True) -> Target:
    """The store and key of a memory-tool path: `/memories/<key>` in the caller's private
    store, `/memories/team/<key>` in the project's team store."""
    if not path or not (path == ROOT or path.startswith(ROOT + "/")):
        raise ToolError(f"Paths start with {ROOT}/ (got {path!r}).")
    rest = path[len(ROOT) :].strip("/")
    private = private_store(project)
    store, key = private, rest
    if rest == TEAM or rest.startswith(TEAM + "/"):
        team = team_store_for(caller().user, private.project)
        if team is None or not get_flags(private.project)["team_memory"]:
            raise ToolError("This project has no team memory you can use.")
        store, key = team, rest[len(TEAM) :].strip("/")
    target = Target(store, key, path.rstrip("/"))
    if file:
        _check_file(target)
    elif key:  # a folder to list, or a file to view: never a path out of the store
        try:
            validate_key(store.path, key)
        except PathTraversalError as exc:
            raise _refused(FileRejected("invalid_key", str(exc), {"key": key})) from None
    return target


def _check_file(target: Target) -> None:
    """`ToolError` unless the target names a memory file of its store (the file rule)."""
    if not target.key:
        raise ToolError(f"{target.shown} is a directory; name a file such as {ROOT}/notes.md.")
    if target.key != INDEX_FILENAME:
        try:
            store_file_path(target.store, target.key)
        except FileRejected as exc:
            raise _refused(exc) from None


def _read(target: Target) -> str:
    if target.key in withheld(target.store):
        raise ToolError(kept_back_message(target.shown))
    try:
        data = (Path(target.store.path) / target.key).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ToolError(f"{target.shown} does not exist.") from None
    served = as_served(target.store, target.key, data)
    if served is None:
        raise ToolError(flagged_index_message(target.shown))
    return served.decode("utf-8", "replace")


def _listing(target: Target) -> str:
    root = Path(target.store.path) / target.key
    if not root.is_dir():
        raise ToolError(f"{target.shown} does not exist.")
    rows = []
    kept_back = withheld(target.store)
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(target.store.path).as_posix()
        if rel.split("/", 1)[0] in target.store.exclude or len(rows) >= MAX_VIEW_FILES:
            continue
        if rel in kept_back:
            continue
        rows.append(f"{path.stat().st_size}\t{target.shown}/{path.relative_to(root).as_posix()}")
    if target.store.kind == Store.Kind.PRIVATE and not target.key:
        with suppress(ToolError):  # no team memory: nothing to list
            rows.append(f"-\t{_target(f'{ROOT}/{TEAM}', None, file=False).shown}/")
    return f"Files in {target.shown}:\n" + ("\n".join(rows) or "(none)")


def _numbered(text: str, view_range: list[int] | None) -> str:
    lines = text.splitlines()
    start, end = 1, len(lines)
    if view_range:
        if len(view_range) != 2 or view_range[0] < 1:
            raise ToolError("view_range is [first line, last line], 1-based (-1: to the end).")
        start, last = view_range
        if start > max(len(lines), 1):
            raise ToolError(f"view_range starts at line {start}; the file has {len(lines)}.")
        if last != -1 and last < start:
            raise ToolError(f"view_range ends at line {last}, before its first line {start}.")
        end = len(lines) if last == -1 else min(last, len(lines))
    return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(start, end + 1))


def _direct(store: Store) -> bool:
    """Whether a write goes straight to the store; else it becomes a proposal for a person
    (team memory always; any store while `lifecycle_apply` is review)."""
    return store.kind != Store.Kind.TEAM and get_flags(store.project)["lifecycle_apply"] == "auto"


def _change(action: str, target: Target, text: str = "") -> ProposedChange:
    memory = parse_memory(text, path=target.key)
    stem = target.key.rsplit("/", 1)[-1].removesuffix(".md")
    return ProposedChange(
        action,
        target.store.kind,
        target.key,
        memory.name or stem,
        memory.description or "",
        memory.type,
        memory.body,
        f"Written by an agent through MCP ({action} {target.shown}).",
    )


def _propose(target: Target, changes: list[ProposedChange]) -> str:
    who = caller()
    proposal = do_propose_changes(Proposal.Kind.EXTRACTION, target.store, who.user, changes)
    assert proposal is not None
    url = who.site_url.rstrip("/") + reverse("proposal", kwargs={"proposal_id": proposal.pk})
    where = "team memory" if target.store.kind == Store.Kind.TEAM else "this project's memory"
    return (
        f"Not written yet: {where} takes changes through review. Proposal #{proposal.pk} "
        f"waits for a person to approve it at {url}; until then {target.shown} is unchanged."
    )


def _write(target: Target, text: str, *, base: str | None) -> str:
    """Write `text` to the target (or propose it): `base` is the checksum the file had when
    it was read ("" for a file that must not exist yet)."""
    try:
        text = check_entry(target.key, text, exclude=target.store.exclude)
    except FileRejected as exc:
        raise _refused(exc) from None
    if not _direct(target.store):
        return _propose(target, [_change("create" if base == "" else "update", target, text)])
    try:
        do_put_files(
            target.store,
            caller().user,
            {target.key: text},
            if_match={target.key: base or None},
            index={target.key: index_entry_for(text, target.key)},
            via=Via.API,
        )
    except FileRejected as exc:
        raise _refused(exc) from None
    return f"Saved {target.shown}."


def memory(
    command: str,
    path: str | None,
    file_text: str | None,
    old_str: str | None,
    new_str: str | None,
    insert_line: int | None,
    insert_text: str | None,
    view_range: list[int] | None,
    old_path: str | None,
    new_path: str | None,
    project: str | None,
) -> str:
    if command == "view":
        target = _target(path, project, file=False)
        full = Path(target.store.path) / target.key
        if not target.key or full.is_dir():
            return _listing(target)
        _check_file(target)
        text = _read(target)
        if caller().session_id:
            mark_surfaced(caller().user, caller().session_id, [target.shown])
        return _numbered(text, view_range)
    needs_scope(ApiToken.Scope.WRITE)  # every command but view writes, or proposes a write
    if command == "rename":
        old, new = _target(old_path, project), _target(new_path, project)
        _needs_scope_for(old.store)
        return _rename(old, new)
    target = _target(path, project)
    _needs_scope_for(target.store)
    if target.key == INDEX_FILENAME:
        raise ToolError(
            f"{INDEX_FILENAME} is the index and memhub keeps it: write topic files, and each "
            "one's index line follows."
        )
    if command == "create":
        if file_text is None:
            raise ToolError("create needs file_text.")
        exists = (Path(target.store.path) / target.key).is_file()
        base = checksum(_read(target).encode()) if exists else ""
        return _write(target, file_text, base=base)
    if command == "delete":
        _read(target)  # exists
        if not _direct(target.store):
            return _propose(target, [_change("delete", target)])
        do_forget_memory(target.store, caller().user, target.key, via=Via.API)
        return f"Deleted {target.shown}."
    text = _read(target)
    base = checksum(text.encode())
    if command == "str_replace":
        if not old_str:
            raise ToolError("str_replace needs old_str (the exact text to replace).")
        found = text.count(old_str)
        if found != 1:
            how = "does not appear" if not found else f"appears {found} times"
            raise ToolError(
                f"No replacement was made: old_str {how} in {target.shown}; it must appear "
                "exactly once."
            )
        return _write(target, text.replace(old_str, new_str or ""), base=base)
    if command == "insert":
        if insert_line is None or insert_text is None:
            raise ToolError("insert needs insert_line and insert_text.")
        lines = text.splitlines(keepends=True)
        if not 0 <= insert_line <= len(lines):
            raise ToolError(f"insert_line must be between 0 and {len(lines)}.")
        added = insert_text if insert_text.endswith("\n") else insert_text + "\n"
        if lines and not lines[-1].endswith("\n") and insert_line == len(lines):
            added = "\n" + added
        return _write(
            target, "".join([*lines[:insert_line], added, *lines[insert_line:]]), base=base
        )
    raise ToolError(f"Unknown command {command!r}.")


def _rename(old: Target, new: Target) -> str:
    if old.store.pk != new.store.pk:
        raise ToolError("A rename stays within one store: private to private, team to team.")
    if INDEX_FILENAME in (old.key, new.key):
        raise ToolError(f"{INDEX_FILENAME} is the index and cannot be renamed.")
    text = _read(old)
    if (Path(new.store.path) / new.key).exists():
        raise ToolError(f"{new.shown} already exists.")
    if not _direct(old.store):
        return _propose(old, [_change("create", new, text), _change("delete", old)])
    try:
        do_rename_memory(old.store, caller().user, old.key, new.key, via=Via.API)
    except FileRejected as exc:
        raise _refused(exc) from None
    return f"Renamed {old.shown} to {new.shown}."


# daily log, proposals, prompt and resources --------------------------------------------------


def log(text: str, memory_type: str | None, date: str | None, project: str | None) -> str:
    needs_scope(ApiToken.Scope.WRITE)
    store = private_store(project)
    try:
        day = datetime.date.fromisoformat(date) if date else timezone.localdate()
    except ValueError:
        raise ToolError(f"date is YYYY-MM-DD (got {date!r}).") from None
    at = None if date else timezone.localtime().strftime("%H:%M")
    try:
        appended = do_append_daily_log(
            store, caller().user, text=text, day=day, at=at, memory_type=memory_type
        )
    except FileRejected as exc:
        raise _refused(exc) from None
    return f"Logged to {appended.key}: {appended.line}"


def proposals() -> str:
    who = caller()
    pending = (
        Proposal.objects.visible_to(who.user)
        .filter(status=Proposal.Status.PENDING)
        .select_related("store__project")
        .prefetch_related("changes")[:50]
    )
    lines = []
    for proposal in pending:
        url = who.site_url.rstrip("/") + reverse("proposal", kwargs={"proposal_id": proposal.pk})
        changes = ", ".join(f"{c.action} {c.key}" for c in proposal.changes.all())
        lines.append(f"- #{proposal.pk} {proposal.kind} for {proposal.store}: {changes} ({url})")
    if not lines:
        return "Nothing waits for your review."
    return "Waiting for your review:\n" + "\n".join(lines)


def prompt_text(project: str | None) -> str:
    store = private_store(project)
    return assemble_for(caller().user, store, ROOT).text


def resources() -> list[tuple[str, str, str]]:
    """(uri, name, description) of every MEMORY.md and topic file the caller may read in
    the private and team stores of the projects they use."""
    who = caller()
    stores = (
        Store.objects.visible_to(who.user)
        .filter(kind__in=(Store.Kind.PRIVATE, Store.Kind.TEAM), project__isnull=False, mount="")
        .select_related("project")
    )
    found = []
    for store in stores:
        base = f"memhub://{store.project.repo_slug or store.project.key}/{store.kind}"
        if (Path(store.path) / INDEX_FILENAME).is_file():  # a listed resource can be read
            found.append((f"{base}/{INDEX_FILENAME}", f"{store} index", "The store's MEMORY.md."))
        files = store.files.exclude(path__in=withheld(store))
        for path, description in files.values_list("path", "description"):
            found.append((f"{base}/{path}", path, description))
    return found


def read_resource(uri: str) -> str:
    """The text of `memhub://<project>/<scope>/<key>`; `ToolError` when it is none of the
    caller's."""
    rest = uri.removeprefix("memhub://")
    for scope in (Store.Kind.PRIVATE, Store.Kind.TEAM):
        project, sep, key = rest.partition(f"/{scope}/")
        if sep and project and key:
            break
    else:
        raise ToolError(f"Not a memhub resource: {uri!r} (memhub://<project>/<scope>/<key>).")
    shown = f"{ROOT}/{TEAM}/{key}" if scope == Store.Kind.TEAM else f"{ROOT}/{key}"
    target = _target(shown, project)
    if target.key != INDEX_FILENAME and not target.store.files.filter(path=target.key).exists():
        raise ToolError(f"{uri} does not exist.")
    return _read(target)
