"""Agent memory snapshots committed to a repository (docs/design.md §13).

A project may commit a snapshot of an agent's memory so every teammate's agent starts from it::

    <repo>/.claude/agent-memory-snapshots/<agent>/
        snapshot.json          {"updatedAt": "<ISO date>"}
        MEMORY.md, *.md …      the snapshot's files (top level only)

An agent memory dir (any scope) records the snapshot it last took in ``.snapshot-synced.json``
(``{"syncedFrom": "<updatedAt>"}``). :func:`snapshot_status` decides exactly as the client does:

1. no valid ``snapshot.json`` (missing, bad JSON, ``updatedAt`` missing, empty, not text or not
   a date) → ``none``, with the reason;
2. no top-level ``*.md`` file in the memory dir → ``initialize``;
3. marker missing or invalid, or ``updatedAt`` later than ``syncedFrom`` → ``update_available``;
4. else ``none``.

A marker whose ``syncedFrom`` is not a date counts as invalid (rule 3). Dates are ISO 8601; one
without an offset is read as UTC, as JavaScript reads a date-only string.

Applying (:func:`initialize_from_snapshot`, :func:`merge_from_snapshot`, :func:`keep_local`,
:func:`replace_from_snapshot`) writes each file atomically and the marker last, so a crash
midway leaves the update still pending and the action can simply run again. Every file name
goes through :func:`~memapp.memdir.keys.validate_key` against both directories; a snapshot file
that fails it, is not a regular file (symlinks included), is too large, would overwrite the
marker, or holds a secret (:func:`~memapp.memdir.secret_rules.scan_text`) is never copied: it is
reported as refused, with the rule or label and line, never the secret.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import stat
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memapp.memdir.atomic import delete_file, write_atomic_bytes
from memapp.memdir.comparison import Change, FileChange, compare_file, content_sha256
from memapp.memdir.frontmatter import decode_bytes
from memapp.memdir.index import (
    INDEX_FILENAME,
    parse_index_entries,
    with_index_entry,
)
from memapp.memdir.keys import PathTraversalError, validate_key
from memapp.memdir.paths import agent_memory_dir
from memapp.memdir.secret_rules import SecretHit, scan_text
from memapp.memdir.store_files import MAX_ENTRY_BYTES, open_store_file

__all__ = [
    "MARKER_FILENAME",
    "MAX_SNAPSHOT_FILE_BYTES",
    "SNAPSHOTS_FOLDER",
    "SNAPSHOT_JSON",
    "SnapshotActionResult",
    "PublishResult",
    "Refusal",
    "SnapshotChanged",
    "SnapshotError",
    "SnapshotMeta",
    "SnapshotReview",
    "SnapshotSecretError",
    "SnapshotStatus",
    "compare_snapshot",
    "format_iso",
    "initialize_from_snapshot",
    "keep_local",
    "merge_from_snapshot",
    "parse_iso_date",
    "publish_snapshot",
    "read_marker",
    "read_snapshot_meta",
    "replace_from_snapshot",
    "snapshot_dir",
    "snapshot_status",
]

SNAPSHOTS_FOLDER = "agent-memory-snapshots"
SNAPSHOT_JSON = "snapshot.json"
MARKER_FILENAME = ".snapshot-synced.json"
# A snapshot file larger than a memory file may be (docs/design.md §6a) is refused.
MAX_SNAPSHOT_FILE_BYTES = MAX_ENTRY_BYTES
MAX_JSON_BYTES = 64 * 1024
# The scan cap an agent applies when it loads memory (docs/design.md §6): reported, not enforced.
SCAN_FILES = 200

Action = Literal["none", "initialize", "update_available"]


class SnapshotError(ValueError):
    """The snapshot cannot be applied or published as asked; nothing was written."""


class SnapshotChanged(SnapshotError):
    """The snapshot (or the files approved) changed since the decision was made."""


class SnapshotSecretError(SnapshotError):
    """Publishing refused: the secret filter found something. ``hits`` are (file, hit) pairs."""

    def __init__(self, hits: list[tuple[str, SecretHit]]) -> None:
        self.hits = hits
        listed = "; ".join(f"{name} {hit}" for name, hit in hits)
        super().__init__(f"secrets found, nothing published: {listed}")


# --- reading ------------------------------------------------------------------------------------


def snapshot_dir(repo: str | os.PathLike[str], agent_type: str) -> Path:
    """``<repo>/.claude/agent-memory-snapshots/<agent>``, the agent type with ``:`` → ``-``.

    Raises ValueError for an agent type that is not a single safe path segment.
    """
    name = agent_memory_dir(agent_type, "project", repo=repo).name
    return Path(repo) / ".claude" / SNAPSHOTS_FOLDER / name


def _read_limited(path: Path, limit: int) -> bytes:
    """A regular file's bytes, never through a symlink, never more than ``limit`` (else
    SnapshotError), without touching its atime where the kernel allows it."""
    fd = open_store_file(path)  # the store's one reader: no symlink, no FIFO hang, no atime
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SnapshotError("not a regular file")
        chunks, size = [], 0
        while chunk := os.read(fd, 65536):
            size += len(chunk)
            if size > limit:
                raise SnapshotError(f"larger than {limit:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_iso_date(value: str) -> datetime.datetime | None:
    """An ISO 8601 date or date-time as an aware datetime (UTC when no offset), or None."""
    text = value.strip()
    if not text or not text[:4].isdigit():
        return None
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment


def format_iso(moment: datetime.datetime) -> str:
    """``2026-03-28T10:30:00.000Z``: UTC with milliseconds, as JavaScript's toISOString()."""
    utc = moment.astimezone(datetime.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class SnapshotMeta:
    """What ``snapshot.json`` says: ``updated_at`` when valid, else ``problem``."""

    updated_at: str | None
    moment: datetime.datetime | None
    problem: str | None

    @property
    def valid(self) -> bool:
        return self.problem is None


def _json_field(path: Path, filename: str, key: str) -> tuple[str | None, Any, str | None]:
    """(text, datetime, problem) for the date under ``key`` of the JSON file at ``path``."""
    try:
        data = _read_limited(path, MAX_JSON_BYTES)
    except FileNotFoundError:
        return None, None, f"no {filename}"
    except SnapshotError as exc:
        return None, None, f"{filename} is {exc}"
    except OSError as exc:
        return None, None, f"{filename} cannot be read ({exc.strerror or exc})"
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, None, f"{filename} is not valid JSON ({exc})"
    if not isinstance(document, dict):
        return None, None, f"{filename} is not a JSON object"
    if key not in document:
        return None, None, f"{filename} has no {key}"
    value = document[key]
    if not isinstance(value, str):
        return None, None, f"{key} in {filename} is not text"
    if not value:
        return None, None, f"{key} in {filename} is empty"
    moment = parse_iso_date(value)
    if moment is None:
        return value, None, f"{key} in {filename} is not a date: {value[:40]!r}"
    return value, moment, None


def read_snapshot_meta(snapshot: str | os.PathLike[str]) -> SnapshotMeta:
    """Read ``snapshot.json`` of a snapshot dir; never raises."""
    value, moment, problem = _json_field(Path(snapshot) / SNAPSHOT_JSON, SNAPSHOT_JSON, "updatedAt")
    if problem:
        return SnapshotMeta(None, None, problem)
    return SnapshotMeta(value, moment, None)


def read_marker(memory_dir: str | os.PathLike[str]) -> SnapshotMeta:
    """Read ``.snapshot-synced.json`` of an agent memory dir (``syncedFrom``); never raises."""
    value, moment, problem = _json_field(
        Path(memory_dir) / MARKER_FILENAME, MARKER_FILENAME, "syncedFrom"
    )
    if problem:
        return SnapshotMeta(None, None, problem)
    return SnapshotMeta(value, moment, None)


def _top_level_files(directory: Path) -> list[os.DirEntry[str]]:
    """Regular (non-symlink) files directly in ``directory``; none when it is missing."""
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((e for e in entries if e.is_file(follow_symlinks=False)), key=lambda e: e.name)


def _has_local_memory(memory_dir: Path) -> bool:
    return any(e.name.endswith(".md") for e in _top_level_files(memory_dir))


@dataclass(frozen=True)
class SnapshotStatus:
    """The decision for one agent memory dir and one snapshot, with the reason in words."""

    action: Action
    reason: str
    updated_at: str | None = None
    synced_from: str | None = None

    @property
    def pending(self) -> bool:
        return self.action != "none"


def snapshot_status(
    snapshot: str | os.PathLike[str], memory_dir: str | os.PathLike[str]
) -> SnapshotStatus:
    """The decision of docs/design.md §13 for ``memory_dir`` against the snapshot dir
    ``snapshot``."""
    meta = read_snapshot_meta(snapshot)
    if not meta.valid:
        return SnapshotStatus("none", meta.problem or "")
    if not _has_local_memory(Path(memory_dir)):
        return SnapshotStatus("initialize", "no local memory yet (no *.md file)", meta.updated_at)
    marker = read_marker(memory_dir)
    if not marker.valid:
        reason = (
            "never synced from a snapshot"
            if marker.problem == f"no {MARKER_FILENAME}"
            else f"the sync marker is invalid: {marker.problem}"
        )
        return SnapshotStatus("update_available", reason, meta.updated_at)
    assert meta.moment is not None and marker.moment is not None
    if meta.moment > marker.moment:
        return SnapshotStatus(
            "update_available",
            f"the snapshot ({meta.updated_at}) is newer than the last sync ({marker.updated_at})",
            meta.updated_at,
            marker.updated_at,
        )
    return SnapshotStatus(
        "none", f"in sync with {marker.updated_at}", meta.updated_at, marker.updated_at
    )


# --- review -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """A snapshot file that is never copied: its name (as printable text) and why."""

    name: str
    reason: str
    rule: str = ""


@dataclass(frozen=True)
class SnapshotReview:
    """Everything a person needs to decide: status, per-file changes and checks."""

    status: SnapshotStatus
    files: tuple[FileChange, ...]
    refused: tuple[Refusal, ...]
    checks: tuple[str, ...]
    fingerprint: str

    def by_change(self, change: Change) -> list[FileChange]:
        return [f for f in self.files if f.change == change]

    @property
    def secret_files(self) -> list[FileChange]:
        return [f for f in self.files if f.secrets]


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(name: str) -> str:
    """The name itself, or its escaped form when it holds control characters or bad UTF-8."""
    return name if name.isprintable() and _utf8(name) else repr(name)[1:-1]


def _name_problem(root: Path, name: str) -> Refusal | None:
    """Why a top-level file name must not be copied into (or out of) ``root``, if it must not."""
    if not _utf8(name):
        return Refusal(_printable(name), "the name is not valid UTF-8", "not-utf8")
    if not name.isprintable():
        return Refusal(_printable(name), "the name holds control characters", "control-char")
    if name == MARKER_FILENAME:
        return Refusal(name, "it would overwrite the local sync marker", "marker")
    try:
        validate_key(root, name)
    except PathTraversalError as exc:
        return Refusal(name, str(exc).split(": ", 1)[-1], exc.rule)
    return None


@dataclass(frozen=True)
class _Snapshot:
    meta: SnapshotMeta
    files: dict[str, bytes]  # name -> bytes, only names that passed every path rule
    refused: list[Refusal]


def _read_snapshot(snapshot: Path, memory_dir: Path) -> _Snapshot:
    meta = read_snapshot_meta(snapshot)
    files: dict[str, bytes] = {}
    refused: list[Refusal] = []
    try:
        entries = sorted(os.scandir(snapshot), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    for entry in entries:
        name = entry.name
        if name == SNAPSHOT_JSON:
            continue
        if entry.is_symlink():
            refused.append(Refusal(_printable(name), "a symbolic link", "symlink"))
            continue
        if entry.is_dir(follow_symlinks=False):
            refused.append(
                Refusal(_printable(name), "a directory: snapshots hold top-level files", "dir")
            )
            continue
        if not entry.is_file(follow_symlinks=False):
            refused.append(Refusal(_printable(name), "not a regular file", "not-file"))
            continue
        problem = _name_problem(snapshot, name) or _name_problem(memory_dir, name)
        if problem:
            refused.append(problem)
            continue
        try:
            files[name] = _read_limited(snapshot / name, MAX_SNAPSHOT_FILE_BYTES)
        except SnapshotError as exc:
            refused.append(Refusal(name, str(exc), "too-large"))
        except OSError as exc:
            refused.append(Refusal(name, f"unreadable ({exc.strerror or exc})", "unreadable"))
    return _Snapshot(meta, files, refused)


def _local_files(memory_dir: Path) -> dict[str, bytes]:
    """The local dir's top-level regular files that a snapshot could touch (no hidden files)."""
    found = {}
    for entry in _top_level_files(memory_dir):
        if entry.name.startswith("."):
            continue
        try:
            found[entry.name] = _read_limited(Path(entry.path), MAX_SNAPSHOT_FILE_BYTES)
        except (OSError, SnapshotError):
            found[entry.name] = b""  # shown as changed; its content is not needed to decide
    return found


def _text(data: bytes) -> str:
    return decode_bytes(data)[0]


def _fingerprint(updated_at: str | None, files: Iterable[FileChange]) -> str:
    digest = hashlib.sha256((updated_at or "").encode())
    for f in files:
        digest.update(f"\0{f.name}\0{f.local_sha256}\0{f.snapshot_sha256}".encode())
    return digest.hexdigest()[:32]


def compare_snapshot(
    snapshot: str | os.PathLike[str], memory_dir: str | os.PathLike[str]
) -> SnapshotReview:
    """The status, a per-file comparison and the checks, for a person to review.

    Files are the snapshot's top-level files (``snapshot.json`` aside) and the local dir's
    top-level non-hidden files. Diffs of topic files compare the bodies, with frontmatter
    changes listed per field; other files are diffed whole. A file holding a secret is never
    diffed (the value must not be shown): only the rule, label and line are. ``fingerprint``
    changes whenever the snapshot or local files do, so a decision can be tied to what was seen.
    """
    snapshot, memory_dir = Path(snapshot), Path(memory_dir)
    status = snapshot_status(snapshot, memory_dir)
    read = _read_snapshot(snapshot, memory_dir)
    local = _local_files(memory_dir)
    names = sorted(set(read.files) | set(local), key=lambda n: (n != INDEX_FILENAME, n))
    files = tuple(compare_file(n, local.get(n), read.files.get(n)) for n in names)
    checks = []
    topic_count = sum(1 for n in read.files if n.endswith(".md") and n != INDEX_FILENAME)
    if topic_count > SCAN_FILES:
        checks.append(
            f"{topic_count} topic files: an agent's scan sees only the newest {SCAN_FILES}"
        )
    if read.files and INDEX_FILENAME not in read.files:
        checks.append("the snapshot has no MEMORY.md")
    return SnapshotReview(
        status, files, tuple(read.refused), tuple(checks), _fingerprint(read.meta.updated_at, files)
    )


# --- applying -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotActionResult:
    """What an action did: files written and removed, files refused, index entries added."""

    action: str
    updated_at: str
    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = ()
    index_entries: tuple[str, ...] = ()
    approved: dict[str, str] = field(default_factory=dict)  # name -> sha256 of what was written


def _load(
    snapshot: Path, memory_dir: Path, updated_at: str | None
) -> tuple[str, dict[str, bytes], list[Refusal]]:
    """The snapshot's applicable files (secrets refused) after checking it is still the one
    the decision was made on."""
    read = _read_snapshot(snapshot, memory_dir)
    if not read.meta.valid:
        raise SnapshotError(f"no valid snapshot: {read.meta.problem}")
    assert read.meta.updated_at is not None
    if updated_at is not None and read.meta.updated_at != updated_at:
        raise SnapshotChanged(
            f"the snapshot is now {read.meta.updated_at}, the decision was for {updated_at}"
        )
    files, refused = {}, list(read.refused)
    for name, data in read.files.items():
        hits = scan_text(_text(data))
        if hits:
            refused.extend(
                Refusal(name, f"{hit.label} on line {hit.line}", hit.rule_id) for hit in hits
            )
        else:
            files[name] = data
    return read.meta.updated_at, files, refused


def _check_expected(files: Mapping[str, bytes], expected: Mapping[str, str] | None) -> None:
    if expected is None:
        return
    for name, sha in expected.items():
        if name not in files:
            raise SnapshotChanged(f"{name!r} is no longer in the snapshot")
        if content_sha256(files[name]) != sha:
            raise SnapshotChanged(f"{name!r} changed since it was approved")


def _write_files(memory_dir: Path, files: Mapping[str, bytes]) -> list[str]:
    """Validate every target first (nothing written if one fails), then write each atomically;
    a file whose content is already there is left alone (its mtime too)."""
    targets = {name: validate_key(memory_dir, name) for name in files}
    memory_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        target = targets[name]
        try:
            if target.is_file() and not target.is_symlink() and target.read_bytes() == data:
                continue
        except OSError:
            pass
        write_atomic_bytes(target, data)
        written.append(name)
    return written


def _write_marker(memory_dir: Path, updated_at: str) -> None:
    memory_dir.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"syncedFrom": updated_at}).encode("utf-8")
    write_atomic_bytes(memory_dir / MARKER_FILENAME, data)


def initialize_from_snapshot(
    snapshot: str | os.PathLike[str],
    memory_dir: str | os.PathLike[str],
    *,
    updated_at: str | None = None,
    expected: Mapping[str, str] | None = None,
) -> SnapshotActionResult:
    """Copy the snapshot's top-level files into ``memory_dir`` (created if missing), then write
    the marker. ``updated_at``, when given, must still be the snapshot's (else
    :class:`SnapshotChanged`); so must each file's SHA-256 in ``expected``."""
    snapshot, memory_dir = Path(snapshot), Path(memory_dir)
    stamp, files, refused = _load(snapshot, memory_dir, updated_at)
    _check_expected(files, expected)
    written = _write_files(memory_dir, files)
    _write_marker(memory_dir, stamp)
    approved = {name: content_sha256(data) for name, data in files.items()}
    return SnapshotActionResult(
        "initialize", stamp, tuple(written), (), tuple(refused), (), approved
    )


def _index_lines(data: bytes) -> dict[str, str]:
    return {e.path: e.raw for e in parse_index_entries(_text(data)) if e.path and "/" not in e.path}


def merge_from_snapshot(
    snapshot: str | os.PathLike[str],
    memory_dir: str | os.PathLike[str],
    names: Collection[str],
    *,
    updated_at: str | None = None,
    expected: Mapping[str, str] | None = None,
) -> SnapshotActionResult:
    """Apply the snapshot files in ``names`` (the ones a person ticked), keep every other local
    file, then write the marker.

    A name that is not an applicable snapshot file (refused, or holding a secret, or absent)
    raises :class:`SnapshotError` before anything is written. When ``MEMORY.md`` is not among
    ``names``, a merged topic file that the local index does not list gets the snapshot's index
    line for it, so what was merged is not left out of the index.
    """
    snapshot, memory_dir = Path(snapshot), Path(memory_dir)
    stamp, files, refused = _load(snapshot, memory_dir, updated_at)
    chosen = list(dict.fromkeys(names))
    refused_names = {r.name for r in refused}
    for name in chosen:
        if name in refused_names:
            raise SnapshotError(f"{name!r} cannot be applied: it was refused")
        if name not in files:
            raise SnapshotError(f"{name!r} is not a file of the snapshot")
    picked = {name: files[name] for name in chosen}
    _check_expected(picked, expected)
    if expected is not None and set(expected) != set(picked):
        raise SnapshotChanged("the files to merge differ from the ones approved")
    written = _write_files(memory_dir, picked)
    entries: list[str] = []
    if INDEX_FILENAME not in picked and INDEX_FILENAME in files:
        theirs = _index_lines(files[INDEX_FILENAME])
        index_path = validate_key(memory_dir, INDEX_FILENAME)
        try:
            current = index_path.read_bytes().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            current = ""
        ours = {e.path for e in parse_index_entries(current)}
        text = current
        for name in picked:
            if name in theirs and name not in ours:
                text = with_index_entry(text, name, theirs[name])
                entries.append(name)
        if text != current:
            write_atomic_bytes(index_path, text.encode("utf-8", "surrogateescape"))
    _write_marker(memory_dir, stamp)
    approved = {name: content_sha256(data) for name, data in picked.items()}
    return SnapshotActionResult(
        "merge", stamp, tuple(written), (), tuple(refused), tuple(entries), approved
    )


def keep_local(
    snapshot: str | os.PathLike[str],
    memory_dir: str | os.PathLike[str],
    *,
    updated_at: str | None = None,
) -> SnapshotActionResult:
    """Change no memory file; only write the marker, so the snapshot counts as synced."""
    snapshot, memory_dir = Path(snapshot), Path(memory_dir)
    meta = read_snapshot_meta(snapshot)
    if not meta.valid:
        raise SnapshotError(f"no valid snapshot: {meta.problem}")
    assert meta.updated_at is not None
    if updated_at is not None and meta.updated_at != updated_at:
        raise SnapshotChanged(
            f"the snapshot is now {meta.updated_at}, the decision was for {updated_at}"
        )
    _write_marker(memory_dir, meta.updated_at)
    return SnapshotActionResult("keep", meta.updated_at)


def replace_from_snapshot(
    snapshot: str | os.PathLike[str],
    memory_dir: str | os.PathLike[str],
    *,
    updated_at: str | None = None,
    expected: Mapping[str, str] | None = None,
) -> SnapshotActionResult:
    """Make the local top-level ``*.md`` files exactly the snapshot's, then write the marker.

    Other local files (not ``*.md``, hidden, or in subdirectories) are kept. The snapshot's files
    are written first and the leftover local ``*.md`` removed after, so a crash midway never
    leaves the memory dir emptier than either side.
    """
    snapshot, memory_dir = Path(snapshot), Path(memory_dir)
    stamp, files, refused = _load(snapshot, memory_dir, updated_at)
    _check_expected(files, expected)
    if expected is not None and set(expected) != set(files):
        raise SnapshotChanged("the snapshot's files differ from the ones approved")
    written = _write_files(memory_dir, files)
    removed = []
    for entry in _top_level_files(memory_dir):
        if entry.name.endswith(".md") and entry.name not in files:
            delete_file(entry.path, missing_ok=True)
            removed.append(entry.name)
    _write_marker(memory_dir, stamp)
    approved = {name: content_sha256(data) for name, data in files.items()}
    return SnapshotActionResult(
        "replace", stamp, tuple(written), tuple(removed), tuple(refused), (), approved
    )


# --- publishing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublishResult:
    updated_at: str
    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]
    refused: tuple[Refusal, ...]


def publish_snapshot(
    memory_dir: str | os.PathLike[str],
    snapshot: str | os.PathLike[str],
    *,
    now: datetime.datetime | None = None,
) -> PublishResult:
    """Write the agent memory dir's top-level files as a new snapshot, ``updatedAt`` = now.

    Hidden files (the marker among them) and subdirectories are not published; snapshot files
    no longer in the memory dir are removed; ``snapshot.json`` is written last. The publisher's
    own memory gets the marker too (it is the snapshot, so it needs no update). Raises
    :class:`SnapshotSecretError` when the secret filter finds anything, and
    :class:`SnapshotError` when there is no ``*.md`` to publish; nothing is written then.
    """
    memory_dir, snapshot = Path(memory_dir), Path(snapshot)
    files: dict[str, bytes] = {}
    refused: list[Refusal] = []
    for entry in _top_level_files(memory_dir):
        if entry.name.startswith("."):
            continue
        problem = _name_problem(snapshot, entry.name) or _name_problem(memory_dir, entry.name)
        if problem:
            refused.append(problem)
            continue
        try:
            files[entry.name] = _read_limited(Path(entry.path), MAX_SNAPSHOT_FILE_BYTES)
        except (OSError, SnapshotError) as exc:
            refused.append(Refusal(entry.name, str(exc), "unreadable"))
    hits = [(name, hit) for name, data in files.items() for hit in scan_text(_text(data))]
    if hits:
        raise SnapshotSecretError(hits)
    if not any(name.endswith(".md") for name in files):
        raise SnapshotError(f"no memory to publish in {memory_dir}")
    stamp = format_iso(now or datetime.datetime.now(datetime.UTC))
    written = _write_files(snapshot, files)
    removed = []
    for entry in _top_level_files(snapshot):
        if entry.name not in files and entry.name != SNAPSHOT_JSON and entry.name[0] != ".":
            delete_file(entry.path, missing_ok=True)
            removed.append(entry.name)
    write_atomic_bytes(snapshot / SNAPSHOT_JSON, json.dumps({"updatedAt": stamp}).encode())
    _write_marker(memory_dir, stamp)
    unchanged = tuple(n for n in files if n not in written)
    return PublishResult(stamp, tuple(written), tuple(removed), unchanged, tuple(refused))
