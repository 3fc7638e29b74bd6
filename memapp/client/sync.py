"""Two-way sync of a private memory directory with its store on a memhub server.

Each key (a memory file of the private store by the file rule of docs/design.md §6a: outside
`team/` and `logs/`, no hidden names, no conflict copies) is decided
three-way from its local checksum L, its remote checksum R and the checksum B both sides had
at the last sync, kept in a state file in the config dir:

    L == R                 nothing to send; B becomes L
    L == B, R changed      download (or delete locally when the server deleted it)
    R == B, L changed      upload with R as the batch's `base` (or delete remotely)
    both changed           a conflict, resolved so that neither version is lost:
      both edited          keep the local file under its key, save the server's version next to
                           it as `<stem>.remote-<8 hex of R>.md`, upload the local one (an
                           index, `MEMORY.md`, is merged line by line instead: its lines are
                           links)
      deleted here         restore the server's version
      deleted there        upload the local version again

A conflict copy is not a memory file: it stays on this machine, never uploaded, for the person
the report names it to, who merges what they want into the file and deletes the copy. Uploads
go in batches under 200,000 bytes
with the last-seen checksum as a precondition; when the server says a file changed meanwhile
(412), the whole decision is made again from fresh checksums, at most twice more.

No secret leaves the machine: files the fast secret rules flag are skipped before anything is
sent, and files the server refuses for secrets (422) are dropped from the batch, which is sent
once more without them. Both are reported, by rule and line, never by value. A dry run reads
and scans the files it would upload with the same functions, so it reports the same skips.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

from memapp.client.config import private_dir
from memapp.client.http import ApiError, Client
from memapp.client.project import Project
from memapp.client.sync_state import (
    exclusive,
    load_base,
    local_checksum,
    read_refusal,
    save_base,
    state_identity,
    state_path,
)
from memapp.memdir.atomic import delete_file, keep_mtime, write_atomic
from memapp.memdir.deletions import too_many_deletions
from memapp.memdir.keys import PathTraversalError, normalize_key, validate_key
from memapp.memdir.secret_rules import place, scan_name, scan_text
from memapp.memdir.store_files import (
    INDEX_FILENAME,
    TEAM_DIR,
    FileRejected,
    check_entry,
    checksum,
    is_index_key,
    is_store_key,
    read_store_file,
    split_batches,
    walk_store,
)

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = [
    "PRIVATE_STORES",
    "Action",
    "PrivateSyncReport",
    "StoredKeys",
    "as_stored",
    "conflict_copy_key",
    "is_syncable_key",
    "merge_index_lines",
    "plan_sync",
    "private_store_id",
    "scan_local",
    "sync_project",
]

# Top-level entries of the memory dir that are stores of their own, never in the private one
# (the file rule of docs/design.md §6a leaves out the rest: daily logs, hidden names …).
PRIVATE_STORES = (TEAM_DIR,)
MAX_ROUNDS = 3  # the first decision plus at most two after a 412

SecretScan = Callable[[str], list]


@dataclass(frozen=True)
class Action:
    """What to do with one key. `kind` is one of upload, download, delete_local,
    delete_remote, keep_both; `conflict` says why, when both sides changed."""

    kind: str
    key: str
    local: str | None
    remote: str | None
    conflict: str = ""


def plan_sync(
    local: dict[str, str], remote: dict[str, str], base: dict[str, str]
) -> tuple[list[Action], dict[str, str | None]]:
    """The actions for every key, and the keys that are already in sync (key → the checksum
    to remember, None to forget the key). Pure: no disk, no network."""
    actions: list[Action] = []
    settled: dict[str, str | None] = {}
    for key in sorted({*local, *remote, *base}):
        lc, rc, bc = local.get(key), remote.get(key), base.get(key)
        if lc == rc:
            settled[key] = lc
        elif lc == bc:
            actions.append(Action("download" if rc else "delete_local", key, lc, rc))
        elif rc == bc:
            actions.append(Action("upload" if lc else "delete_remote", key, lc, rc))
        elif lc is None:
            actions.append(Action("download", key, lc, rc, "deleted here, changed on the server"))
        elif rc is None:
            actions.append(Action("upload", key, lc, rc, "changed here, deleted on the server"))
        else:
            actions.append(Action("keep_both", key, lc, rc, "changed here and on the server"))
    return actions, settled


def merge_index_lines(local: str, remote: str) -> str:
    """`local`, then every line of `remote` it does not already have (blank lines aside), in
    the server's order: an index entry added on either side survives."""
    have = set(local.splitlines())
    extra = [line for line in remote.splitlines() if line.strip() and line not in have]
    if not extra:
        return local
    joined = local if not local or local.endswith("\n") else local + "\n"
    return joined + "\n".join(extra) + "\n"


def conflict_copy_key(key: str, remote: str, taken: Callable[[str], bool]) -> str:
    """Where the server's version of a conflicting `key` is saved: `<stem>.remote-<8 hex>.md`
    beside it (`-2`, `-3` … appended while `taken` says a name is in use)."""
    path = PurePosixPath(key)
    short = remote.removeprefix("sha256:")[:8]
    candidate = str(path.with_name(f"{path.stem}.remote-{short}.md"))
    number = 2
    while taken(candidate):
        candidate = str(path.with_name(f"{path.stem}.remote-{short}-{number}.md"))
        number += 1
    return candidate


# --- the local side -------------------------------------------------------------------------


def is_syncable_key(key: str) -> bool:
    return is_store_key(key, PRIVATE_STORES)


def scan_local(memory_dir: Path) -> tuple[dict[str, str], set[str]]:
    """Checksums of the memory files of the private store (docs/design.md §6a), and the keys
    that exist locally but must not be touched (symlinks and other non-regular files: following
    one could read or overwrite something outside the memory dir)."""
    checksums: dict[str, str] = {}
    untouchable: set[str] = set()
    for found in walk_store(memory_dir, PRIVATE_STORES, untouchable=untouchable):
        data = read_store_file(found)
        if data is None:
            untouchable.add(found.key)
        else:
            checksums[found.key] = checksum(data)
    return checksums, untouchable


class StoredKeys(NamedTuple):
    """A scan of the memory dir by the keys the server stores its files under."""

    checksums: dict[str, str]  # stored key -> the local file's checksum
    spelt: dict[str, str]  # stored key -> the local file's own name, where the two differ
    untouchable: set[str]  # scan_local's, and every key of `twins`: left alone
    twins: list[list[str]]  # local names the server would store as one, its spelling first


def as_stored(local: dict[str, str], untouchable: set[str], remote: Collection[str]) -> StoredKeys:
    """`local` (a :func:`scan_local`) keyed as the server stores each file: under its own
    name when the server has that spelling, else under the server's key of the same NFC form,
    else in NFC (docs/design.md §4), so a file a Mac named in NFD is the server's NFC key (and
    one named in NFC the server's older NFD key), not a second file. Local files that would be one
    there (`café.md` in NFC and in NFD, side by side on Linux) are left alone: sending both
    would keep one's text, and a later sync delete the other as gone from the server."""
    # The server's keys by their NFC form: one it stored in NFD (before memhub composed names)
    # is the file a machine here names in NFC.
    composed = {normalize_key(key): key for key in remote}
    names: dict[str, list[str]] = {}
    for name in local:
        key = name if name in remote else composed.get(normalize_key(name), normalize_key(name))
        names.setdefault(key, []).append(name)
    found = StoredKeys({}, {}, set(untouchable), [])
    for key, spellings in names.items():
        if len(spellings) > 1:
            found.twins.append(sorted(spellings, key=lambda name: (name != key, name)))
            found.untouchable.update([key, *spellings])
            continue
        found.checksums[key] = local[spellings[0]]
        if spellings[0] != key:
            found.spelt[key] = spellings[0]
    return found


def _twins_refused(twins: list[str]) -> str:
    first, *others = twins
    refused = [str(PathTraversalError("lookalike-duplicate", o, beside=first)) for o in others]
    return f"{'; '.join(refused)}; not synced until all but one are renamed"


# --- the report -----------------------------------------------------------------------------


@dataclass
class PrivateSyncReport:
    uploaded: list[str] = field(default_factory=list)
    downloaded: list[str] = field(default_factory=list)
    deleted_local: list[str] = field(default_factory=list)
    deleted_remote: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # one line per conflict, for a person
    secrets: list[dict[str, Any]] = field(default_factory=list)  # {key, rule_id, label, line}
    errors: list[str] = field(default_factory=list)
    planned: list[Action] = field(default_factory=list)  # the dry run's decision
    new_store: bool = False  # the dry run found no store on the server: a sync creates it
    store_id: int | None = None  # the server's store synced with (None: none exists yet)

    @property
    def skipped_secret_keys(self) -> list[str]:
        return sorted({hit["key"] for hit in self.secrets})

    def summary(self) -> str:
        return (
            f"uploaded {len(self.uploaded)}, downloaded {len(self.downloaded)}, "
            f"deleted {len(self.deleted_local)} local / {len(self.deleted_remote)} remote, "
            f"conflicts {len(self.conflicts)}, "
            f"skipped {len(self.skipped_secret_keys)} (secrets)"
        )

    def details(self) -> list[str]:
        """One line per conflict, secret and error, for a person (a file the server refused
        again after a retried round is named once)."""
        lines = [f"conflict: {line}" for line in self.conflicts]
        lines += [
            f"skipped {hit['key']}: {hit.get('label') or 'secret'} "
            f"({hit.get('rule_id', '?')}) {_place(hit.get('line'))}; remove it, then sync again"
            for hit in self.secrets
        ]
        lines += [f"error: {line}" for line in self.errors]
        return list(dict.fromkeys(lines))


# --- the run --------------------------------------------------------------------------------


class _Retry(Exception):
    """The server's files changed during the run (412): decide again from fresh checksums."""


@dataclass
class _Upload:
    key: str
    content: str | None  # None: delete the key on the server
    base: str | None
    mtime_ms: int | None = None  # the local file's, kept on the server (the memory's age)

    def size(self) -> int:
        return len(json.dumps(self.key)) * 2 + len(json.dumps(self.content)) + 80


def _read_local(
    memory_dir: Path, key: str, report: PrivateSyncReport, spelt: dict[str, str]
) -> str | None:
    """A local file's text for upload (`spelt`: its local name, by key, where it is not the
    key), or None (reported) when it cannot be sent."""
    try:
        data = (memory_dir / spelt.get(key, key)).read_bytes()
    except OSError as exc:
        report.errors.append(f"{key}: cannot read it ({exc.strerror}); skipped")
        return None
    try:
        return check_entry(key, data, exclude=PRIVATE_STORES, secrets=False)
    except FileRejected as exc:
        report.errors.append(f"{exc}; skipped")
        return None


def _place(line: object) -> str:
    return place(line, on=True) if isinstance(line, int) else "on line ?"  # a server's, unread


def _without_local_secrets(
    uploads: list[_Upload], secret_scan: SecretScan | None, report: PrivateSyncReport
) -> list[_Upload]:
    """The uploads the local rules find no secret in; the others are reported, by rule and
    line, never by value."""
    if secret_scan is None:
        return uploads
    clean = []
    for item in uploads:
        hits = (
            [*scan_name(item.key), *secret_scan(item.content)] if item.content is not None else []
        )
        if not hits:
            clean.append(item)
            continue
        report.secrets += [
            {"key": item.key, "rule_id": hit.rule_id, "label": hit.label, "line": hit.line}
            for hit in hits
        ]
    return clean


class _Run:
    def __init__(
        self,
        client: Client,
        store_id: int,
        memory_dir: Path,
        base: dict[str, str],
        report: PrivateSyncReport,
        bar: tqdm,
        secret_scan: SecretScan | None,
        save: Callable[[], None],
        remote: dict[str, str],
        spelt: dict[str, str],
    ) -> None:
        self.client, self.store_id, self.memory_dir = client, store_id, memory_dir
        self.remote = remote  # the server's checksums when the round began
        self.spelt = spelt  # a key's local name, where it is not the key (as_stored)
        self.base, self.report, self.bar = base, report, bar
        self.secret_scan, self.save = secret_scan, save

    # remote keys come from the network: every one is checked before it names a local path
    def _path(self, key: str) -> Path | None:
        if not is_syncable_key(key):
            self.report.errors.append(f"{key!r}: not a file of the private store; skipped")
            return None
        try:
            return validate_key(self.memory_dir, self.spelt.get(key, key))
        except PathTraversalError as exc:
            self.report.errors.append(f"{exc}; skipped")
            return None

    def _fetch(self, key: str) -> tuple[str, str, int | None] | None:
        """The server's content of `key`, its checksum and mtime, or None (reported) when it
        cannot be stored faithfully here."""
        try:
            answer = self.client.get(f"/api/v1/stores/{self.store_id}/files/{quote(key, '/')}")
        except ApiError as exc:
            if exc.status == 404:  # deleted since the checksums were listed
                raise _Retry from None
            raise
        content, remote = answer.need("content", str), answer.need("checksum", str)
        try:
            check_entry(key, content, exclude=PRIVATE_STORES, secrets=False)
        except FileRejected as exc:
            self.report.errors.append(f"{exc} (the server's copy); skipped")
            return None
        if checksum(content.encode("utf-8")) != remote:
            self.report.errors.append(f"{key}: the server's copy is not valid UTF-8; skipped")
            return None
        mtime_ms = answer.get("mtime_ms")
        return content, remote, mtime_ms if isinstance(mtime_ms, int) else None

    def _still_as_planned(self, path: Path, action: Action) -> bool:
        """Whether the local file is still what the plan saw (a person or an agent may have
        written it meanwhile: then it is left alone, and the next sync decides again)."""
        current = local_checksum(path)
        if current == action.local:
            return True
        if current == action.remote:  # already what the server has
            self._set_base(action.key, current)
        else:
            self.report.errors.append(f"{action.key}: changed during the sync; left for next time")
        return False

    def _set_base(self, key: str, value: str | None) -> None:
        if value is None:
            self.base.pop(key, None)
        else:
            self.base[key] = value

    def _local(self, key: str) -> Path:
        return self.memory_dir / self.spelt.get(key, key)

    def _read(self, key: str) -> str | None:
        return _read_local(self.memory_dir, key, self.report, self.spelt)

    def download(self, action: Action) -> None:
        self.bar.update(1)
        path = self._path(action.key)
        if path is None or not self._still_as_planned(path, action):
            return
        fetched = self._fetch(action.key)
        # Looked at again: the fetch may take seconds (a slow server, its retries), in which an
        # agent may have written the file; its text is not yet on the server.
        if fetched is None or not self._still_as_planned(path, action):
            return
        content, remote, mtime_ms = fetched
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, content)
        keep_mtime(path, mtime_ms)
        self._set_base(action.key, remote)
        self.report.downloaded.append(action.key)
        if action.conflict:
            self.report.conflicts.append(f"{action.key}: {action.conflict}; restored it here")

    def delete_local(self, action: Action) -> None:
        self.bar.update(1)
        path = self._path(action.key)
        if path is None or not self._still_as_planned(path, action):
            return
        delete_file(path, missing_ok=True)
        self._set_base(action.key, None)
        self.report.deleted_local.append(action.key)

    def keep_both(self, action: Action, uploads: list[_Upload]) -> None:
        path = self._path(action.key)
        fetched = None
        if path is not None and self._still_as_planned(path, action):
            fetched = self._fetch(action.key)
        local = self._read(action.key) if fetched is not None else None
        if fetched is None or local is None:
            self.bar.update(1)
            return
        content, remote, _ = fetched
        assert path is not None  # a fetch needs the key's path
        if is_index_key(action.key):
            self._merge_indexes(action, path, local, content, remote, uploads)
            return
        wanted = checksum(content.encode())

        def taken(key: str) -> bool:  # by another file, here or on the server
            candidate = self.memory_dir / key
            here = candidate.exists() and local_checksum(candidate) != wanted
            return here or self.remote.get(key, wanted) != wanted

        copy_key = conflict_copy_key(action.key, remote, taken)
        try:
            copy_path = validate_key(self.memory_dir, copy_key)
        except PathTraversalError as exc:
            self.report.errors.append(f"{exc}; skipped")
            self.bar.update(1)
            return
        write_atomic(copy_path, content)
        # The server's version is safe in the copy, so from here on the local file is simply
        # a local change on top of it.
        self._set_base(action.key, remote)
        self.save()
        self.report.conflicts.append(
            f"{action.key}: {action.conflict}; kept yours, saved the server's as {copy_key} "
            "(here only: conflict copies are not synced)"
        )
        uploads.append(_Upload(action.key, local, remote))

    def _merge_indexes(
        self,
        action: Action,
        path: Path,
        local: str,
        content: str,
        remote: str,
        uploads: list[_Upload],
    ) -> None:
        """Two versions of an index (one link per line) merge without loss: the local lines,
        then the server's lines the local version lacks."""
        merged = merge_index_lines(local, content)
        write_atomic(path, merged)
        self._set_base(action.key, remote)
        self.save()
        self.report.conflicts.append(
            f"{action.key}: {action.conflict}; merged both versions line by line"
        )
        self.bar.update(1)
        uploads.append(_Upload(action.key, merged, remote))

    def upload(self, action: Action, uploads: list[_Upload]) -> None:
        if action.kind == "delete_remote":
            uploads.append(_Upload(action.key, None, action.remote))
            return
        content = self._read(action.key)
        if content is None:
            self.bar.update(1)
            return
        if action.conflict:
            self.report.conflicts.append(f"{action.key}: {action.conflict}; uploaded yours again")
        try:
            mtime_ms = self._local(action.key).stat().st_mtime_ns // 1_000_000
        except OSError:
            mtime_ms = None
        uploads.append(_Upload(action.key, content, action.remote, mtime_ms))

    def without_local_secrets(self, uploads: list[_Upload]) -> list[_Upload]:
        clean = _without_local_secrets(uploads, self.secret_scan, self.report)
        self.bar.update(len(uploads) - len(clean))
        return clean

    def send(self, uploads: list[_Upload]) -> None:
        for batch in split_batches(uploads, _Upload.size):
            self._send_batch(batch)
            self.save()

    def _send_batch(self, batch: list[_Upload]) -> None:
        pending = {item.key: item for item in batch}
        for _ in range(3):
            if not pending:
                return
            body = {
                "files": {k: i.content for k, i in pending.items() if i.content is not None},
                "delete": [k for k, i in pending.items() if i.content is None],
                "base": {k: i.base for k, i in pending.items()},
                "mtimes": {
                    k: i.mtime_ms
                    for k, i in pending.items()
                    if i.content is not None and i.mtime_ms is not None
                },
            }
            try:
                answer = self.client.post(f"/api/v1/stores/{self.store_id}/batch", body)
            except ApiError as exc:
                if exc.status == 412:
                    raise _Retry from None
                refused = self._refused_keys(exc, pending)
                if not refused:
                    raise
                for key in refused:
                    pending.pop(key)
                    self.bar.update(1)
                continue
            self._record(pending, answer)
            return

    def _refused_keys(self, exc: ApiError, pending: dict[str, _Upload]) -> set[str]:
        """The keys a refusal names, reported; empty when it names none of this batch's."""
        refusal = read_refusal(exc, pending)
        self.report.secrets += refusal.secrets
        if refusal.key is not None:
            self.report.errors.append(f"{refusal.key}: refused by the server: {exc.message}")
        return refusal.keys

    def _record(self, sent: dict[str, _Upload], answer: dict[str, Any]) -> None:
        checksums = answer.get("checksums", {})
        for key, item in sent.items():
            if item.content is None:
                self.base.pop(key, None)
                self.report.deleted_remote.append(key)
            else:
                self.base[key] = checksums.get(key) or checksum(item.content.encode())
                self.report.uploaded.append(key)
            self.bar.update(1)


def _remote_checksums(client: Client, store_id: int, known: set[str]) -> dict[str, str]:
    """Every file's checksum on the server. The listing comes from the server's mirror, which
    may leave out index files (`MEMORY.md`, at the top and in subfolders), so an index this
    machine knows of, and the top-level one, are asked for one by one when missing."""
    remote = client.get(f"/api/v1/stores/{store_id}/files/?view=hashes").need("checksums", dict)
    for key in sorted({INDEX_FILENAME, *filter(is_index_key, known)} - set(remote)):
        try:
            answer = client.get(f"/api/v1/stores/{store_id}/files/{quote(key, '/')}")
        except ApiError as exc:
            if exc.status in (400, 404):
                continue
            raise
        remote[key] = answer.need("checksum", str)
    return remote


def private_store_id(client: Client, project: Project, *, create: bool) -> int | None:
    """The id of the caller's private store of `project`; None when it does not exist yet and
    `create` is false (the server creates it on first use, which a dry run must not do).
    A real sync sends no `create` field, so it still works with servers that lack it."""
    body: dict[str, Any] = {**project.fields(), "scope": "private"}
    if not create:
        body["create"] = False
    try:
        return client.post("/api/v1/stores/resolve", body).need("id", int)
    except ApiError as exc:
        if not create and exc.status == 404 and exc.code == "no_store":
            return None
        raise


def _dry_run(
    memory_dir: Path,
    local: StoredKeys,
    actions: list[Action],
    secret_scan: SecretScan | None,
    *,
    new_store: bool = False,
) -> PrivateSyncReport:
    """A dry run's report: the plan, less the uploads a sync would skip, which are reported as
    the sync reports them (read and scanned by the same functions)."""
    report = PrivateSyncReport(new_store=new_store)
    report.errors += map(_twins_refused, local.twins)
    uploads = []
    for action in actions:
        if action.kind in ("upload", "keep_both"):
            content = _read_local(memory_dir, action.key, report, local.spelt)
            if content is not None:
                uploads.append(_Upload(action.key, content, action.remote))
    sent = {item.key for item in _without_local_secrets(uploads, secret_scan, report)}
    report.planned = [a for a in actions if a.kind != "upload" or a.key in sent]
    return report


def _plan_for_new_store(memory_dir: Path, secret_scan: SecretScan | None) -> PrivateSyncReport:
    """A dry run's decision when the server has no store yet: every local file is uploaded."""
    local = as_stored(*scan_local(memory_dir), remote=())
    actions, _ = plan_sync(local.checksums, {}, {})
    return _dry_run(memory_dir, local, actions, secret_scan, new_store=True)


def _held_deletions(
    memory_dir: Path, actions: list[Action], synced: int, allowed: bool
) -> tuple[list[Action], str | None]:
    """`actions` without the server deletions a sync must not make unasked (too many of the
    `synced` files, or any when the memory dir is missing), and why (None when it makes them
    all), as team sync holds deletions (docs/design.md §17, §18)."""
    gone = [action for action in actions if action.kind == "delete_remote"]
    missing = not memory_dir.is_dir()
    if allowed or not gone or not (missing or too_many_deletions(len(gone), synced)):
        return actions, None
    where = f"{memory_dir} is missing" if missing else f"they are gone from {memory_dir}"
    why = (
        f"{len(gone)} of the {synced} files synced before were not deleted on the server, "
        f"since {where}: put them back, or run `memhub-agent sync --delete-missing` to "
        "delete them there and on your other machines (the server keeps them in its trash)"
    )
    return [action for action in actions if action.kind != "delete_remote"], why


def sync_project(
    client: Client,
    project: Project,
    state_dir: Path,
    *,
    dry_run: bool = False,
    progress: bool = True,
    secret_scan: SecretScan | None = scan_text,
    delete_missing: bool = False,
) -> PrivateSyncReport:
    """Sync `project`'s private memory dir with the caller's private store on the server.

    Raises `ApiError` / `Unreachable` when the server fails in a way a retry cannot fix, and
    `SyncBusy` when another sync of this memory dir holds the lock. Files that cannot be synced
    (secrets, size, encoding, unsafe keys) are skipped and listed in the report.
    `secret_scan` is the local rule set run before anything is sent (None leaves it to the
    server). A dry run changes nothing here or on the server, where it never creates the store.
    Deleting many of the server's files, or any when the memory dir is missing, waits for
    `delete_missing` (`_held_deletions`).
    """
    store_id = private_store_id(client, project, create=not dry_run)
    if store_id is None:
        return _plan_for_new_store(project.memory_dir, secret_scan)
    from tqdm import tqdm  # here, not at the top: a hook's pull must start quickly

    memory_dir = project.memory_dir
    path = state_path(state_dir, client.url, store_id, memory_dir)
    identity = state_identity(client.url, store_id, memory_dir)
    report = PrivateSyncReport(store_id=store_id)
    base = load_base(path, identity)

    def save() -> None:
        if not dry_run:
            save_base(path, identity, base)

    if not dry_run:
        private_dir(state_dir)
    lock = contextlib.nullcontext() if dry_run else exclusive(path.with_suffix(".lock"))
    with lock:
        for round_number in range(MAX_ROUNDS):
            scanned, untouchable = scan_local(memory_dir)
            remote = _remote_checksums(client, store_id, {*scanned, *base})
            local = as_stored(scanned, untouchable, remote)
            actions, settled = plan_sync(
                local.checksums,
                {k: v for k, v in remote.items() if k not in local.untouchable},
                {k: v for k, v in base.items() if k not in local.untouchable},
            )
            actions, held = _held_deletions(memory_dir, actions, len(base), delete_missing)
            if dry_run:
                planned = _dry_run(memory_dir, local, actions, secret_scan)
                planned.store_id = store_id
                planned.errors += [held] if held else []
                return planned
            report.errors += [held] if held and held not in report.errors else []
            report.errors += map(_twins_refused, local.twins)
            for key, value in settled.items():
                if value is None:
                    base.pop(key, None)
                else:
                    base[key] = value
            total = len(actions)
            with tqdm(
                total=total, desc="memhub sync", unit="file", disable=not progress or None
            ) as bar:
                run = _Run(
                    client,
                    store_id,
                    memory_dir,
                    base,
                    report,
                    bar,
                    secret_scan,
                    save,
                    remote,
                    local.spelt,
                )
                try:
                    _execute(run, actions)
                except _Retry:
                    save()
                    if round_number == MAX_ROUNDS - 1:
                        report.errors.append(
                            "the server's files kept changing during the sync; run it again"
                        )
                    continue
            save()
            break
    return report


def _execute(run: _Run, actions: list[Action]) -> None:
    uploads: list[_Upload] = []
    for action in actions:
        try:
            if action.kind == "download":
                run.download(action)
            elif action.kind == "delete_local":
                run.delete_local(action)
            elif action.kind == "keep_both":
                run.keep_both(action, uploads)
            else:
                run.upload(action, uploads)
        except OSError as exc:  # this file only: e.g. a folder where a file should go
            run.report.errors.append(f"{action.key}: {exc.strerror or exc}; skipped")
    run.save()
    run.send(run.without_local_secrets(uploads))
