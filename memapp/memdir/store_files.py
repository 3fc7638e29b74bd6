"""What a store's memory files are: the one rule every walker, sync and write goes by
(docs/design.md §6a).

A *key* names a file relative to a store's directory, `/`-separated. :func:`classify` says
whether a key is one of the store's memory files (a topic file or an index, ``MEMORY.md``) or,
if not, why not. :func:`walk_store` (by directory: :func:`walk_store_dirs`; with stamps instead of
stats: :func:`walk_store_stamps`) is the one walk of a store's directory; :func:`open_store_file`
and :func:`read_file` the one way to read its files (no symlink followed, no atime changed);
:func:`checksum` the one checksum format;
:func:`check_entry` and :func:`check_entries` the one set of entry checks, raising
:class:`FileRejected`; :func:`entry_path` and :func:`write_entries` the way from a key to a file
on disk. The mirror, the agent API, the team memory protocol, the git engine and both
``memhub-agent`` sync commands all use these, so they always agree on what a store holds.
"""

from __future__ import annotations

import enum
import errno
import hashlib
import os
import re
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any, NamedTuple, TypeVar

from memapp.memdir.atomic import write_atomic_files
from memapp.memdir.keys import (
    PathTraversalError,
    check_key,
    check_key_name,
    check_new_keys,
    normalize_key,
    stored_keys,
    validate_keys,
)
from memapp.memdir.secret_rules import place, scan_name, scan_text

__all__ = [
    "CHECKSUM_PREFIX",
    "DAILY_LOGS_DIR",
    "MAX_BATCH_BYTES",
    "MAX_ENTRY_BYTES",
    "TEAM_DIR",
    "INDEX_FILENAME",
    "FileKind",
    "FileRejected",
    "StoreDir",
    "StoreFile",
    "StoreStamps",
    "check_entries",
    "check_entry",
    "check_key_neighbours",
    "checksum",
    "classify",
    "entry_path",
    "entry_paths",
    "is_conflict_copy",
    "is_index_key",
    "is_store_key",
    "normalize_key",
    "open_store_file",
    "read_file",
    "read_store",
    "read_store_file",
    "settled_signature",
    "store_checksums",
    "store_keys",
    "secret_hits",
    "split_batches",
    "walk_store",
    "walk_store_dirs",
    "walk_store_stamps",
    "write_entries",
]

INDEX_FILENAME = "MEMORY.md"  # an index of the memories beside it (docs/design.md §5)
TEAM_DIR = "team"  # a private store's team memory: a store of its own
DAILY_LOGS_DIR = "logs"  # daily logs (docs/design.md §14.8): beside the memories, not among them
# Top-level folders of any store whose files are not its memories. Emptying it makes daily logs
# memory files of their store, for every walk, sync and check at once.
NOT_MEMORY_DIRS = frozenset({DAILY_LOGS_DIR})
MAX_ENTRY_BYTES = 250_000  # the largest memory file any sync sends or accepts
MAX_BATCH_BYTES = 200_000  # an upload's JSON body stays below this; a larger entry goes alone
CHECKSUM_PREFIX = "sha256:"

# `<stem>.remote-<8 hex>.md` (then `-2`, `-3` … when taken): the server's version of a file
# both sides edited, kept beside it by `memhub-agent sync` for a person to reconcile.
_CONFLICT_COPY = re.compile(r"\.remote-[0-9a-f]{8}(?:-[0-9]+)?\.md\Z")


class FileKind(enum.Enum):
    """What a key is to a store: one of its memory files (TOPIC, INDEX) or why it is not."""

    TOPIC = "a topic file"
    INDEX = "an index (MEMORY.md)"
    HIDDEN = "hidden (a name starting with '.')"
    NESTED_STORE = "inside a store of its own"
    DAILY_LOG = "a daily log (logs/)"
    NOT_MARKDOWN = "not a Markdown (.md) file"
    CONFLICT_COPY = "a conflict copy kept by memhub-agent sync (<stem>.remote-<hash>.md)"


def is_conflict_copy(name: str) -> bool:
    return _CONFLICT_COPY.search(name) is not None


def classify(key: str, exclude: Collection[str] = ()) -> FileKind:
    """What `key` is in a store whose top-level entries `exclude` are stores of their own
    (``team/`` in a private store, mounts in a team store). Only the name is looked at."""
    parts = key.split("/")
    name = parts[-1]
    if any(part.startswith(".") for part in parts):
        return FileKind.HIDDEN
    if len(parts) > 1:
        if parts[0] in exclude:
            return FileKind.NESTED_STORE
        if parts[0] in NOT_MEMORY_DIRS:
            return FileKind.DAILY_LOG
    if not name.endswith(".md"):
        return FileKind.NOT_MARKDOWN
    if name == INDEX_FILENAME:
        return FileKind.INDEX
    if is_conflict_copy(name):
        return FileKind.CONFLICT_COPY
    return FileKind.TOPIC


def is_store_key(key: str, exclude: Collection[str] = ()) -> bool:
    """Whether `key` names one of the store's memory files (a topic file or an index)."""
    return classify(key, exclude) in (FileKind.TOPIC, FileKind.INDEX)


def is_index_key(key: str) -> bool:
    return key.rsplit("/", 1)[-1] == INDEX_FILENAME


def _skipped_dir(prefix: str, name: str, excluded: Collection[str]) -> bool:
    """Whether a directory holds no memory files of the store (the walk does not enter it)."""
    if name.startswith("."):
        return True
    return not prefix and (name in excluded or name in NOT_MEMORY_DIRS)


class StoreFile(NamedTuple):
    """A memory file found by :func:`walk_store`. `dir_fd` is open only until the walk moves
    on to the next directory: read the file at once (:func:`read_store_file`)."""

    key: str
    prefix: str  # the key's directory, "" or "sub/dir/"
    name: str
    dir_fd: int
    stat: os.stat_result  # lstat: a regular file


class StoreDir(NamedTuple):
    """One directory of a store as :func:`walk_store_dirs` found it. `dir_fd` is open only
    until the walk moves on: read its files at once (:func:`open_store_file` with it)."""

    prefix: str  # "" for the store's top, else "sub/dir/"
    dir_fd: int
    names: list[str]  # of its memory files (regular files), in the order the directory lists them
    stats: list[os.stat_result]  # their lstats, in the same order


class StoreStamps(NamedTuple):
    """One directory of a store as :func:`walk_store_stamps` found it (`dir_fd` as in
    :class:`StoreDir`)."""

    prefix: str
    dir_fd: int
    names: list[str]
    mtimes: list[int]  # in ns, in the order of `names`
    ctimes: list[int]  # in ns
    sizes: list[int]


# -- the one reader of store files ---------------------------------------------------------------
# Every part of memhub that reads a store's files (the scan, the mirror, recall, consolidation,
# sync) opens them here, so they share one set of flags and one atime policy: never through a
# symlink (O_NOFOLLOW), never hanging on a FIFO swapped in (O_NONBLOCK), and without changing
# the atime (O_NOATIME, which the kernel allows on our own files or as root; elsewhere it
# refuses it and the file is opened without).

_new_tuple = tuple.__new__
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_NOATIME = getattr(os, "O_NOATIME", 0)
_EUID = os.geteuid() if hasattr(os, "geteuid") else -1


def _open_noatime(path: str | os.PathLike[str], flags: int, dir_fd: int | None, uid: int) -> int:
    if _NOATIME and (uid == -1 or uid == _EUID or _EUID == 0):
        try:
            return os.open(path, flags | _NOATIME, dir_fd=dir_fd)
        except PermissionError:
            pass  # not our file: O_NOATIME is refused
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # a file system without O_NOATIME
                raise
    return os.open(path, flags, dir_fd=dir_fd)


def open_store_file(
    path: str | os.PathLike[str], *, dir_fd: int | None = None, st: os.stat_result | None = None
) -> int:
    """A read-only descriptor of a store's file (`path` relative to `dir_fd` when given), by
    the one set of flags and atime policy above. `st`, its lstat when known, saves a refused
    O_NOATIME attempt on a file that is not ours. Raises ``OSError`` (``ELOOP`` for a
    symlink)."""
    return _open_noatime(path, _READ_FLAGS, dir_fd, -1 if st is None else st.st_uid)


def read_file(
    path: str | os.PathLike[str],
    *,
    dir_fd: int | None = None,
    st: os.stat_result | None = None,
    limit: int | None = None,
) -> bytes:
    """The bytes of a store's file (at most `limit` of them), read through
    :func:`open_store_file`: atime, mtime and content left as they were."""
    fd = open_store_file(path, dir_fd=dir_fd, st=st)
    try:
        if limit is not None:
            return os.read(fd, limit)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_directory(path: str, follow: bool) -> int:
    return _open_noatime(path, _DIR_FLAGS if follow else _DIR_FLAGS | _NOFOLLOW, None, -1)


def walk_store_dirs(
    directory: str | os.PathLike[str],
    exclude: Collection[str] = (),
    *,
    indexes: bool = True,
    untouchable: set[str] | None = None,
) -> Iterator[StoreDir]:
    """The memory files of the store in `directory`, as :func:`classify` defines them
    (`indexes=False` leaves out ``MEMORY.md`` files), one directory at a time, in no
    particular order, each with its lstat.

    Never writes, never follows a symlink below `directory` (which may itself be one) and never
    changes an atime: directories are opened with ``O_NOATIME`` where allowed. A memory file's
    key held by a symlink or another non-regular file is added to `untouchable` when given
    (following it could read or write outside the store). A missing `directory` has no files;
    unreadable subdirectories are skipped; ``OSError`` is raised only when `directory` exists
    but cannot be listed (an empty answer would read as "everything was deleted").
    """
    for found in _walk_dirs(directory, exclude, indexes, untouchable, stamps=False):
        yield _new_tuple(StoreDir, found)


def walk_store_stamps(
    directory: str | os.PathLike[str], exclude: Collection[str] = (), *, indexes: bool = True
) -> Iterator[StoreStamps]:
    """:func:`walk_store_dirs` with each file's mtime, ctime and size instead of its lstat: a
    rescan compares only those, and keeping thousands of stat results alive costs it more than
    the stat calls themselves."""
    for found in _walk_dirs(directory, exclude, indexes, None, stamps=True):
        yield _new_tuple(StoreStamps, found)


def _walk_dirs(
    directory: str | os.PathLike[str],
    exclude: Collection[str],
    indexes: bool,
    untouchable: set[str] | None,
    stamps: bool,
) -> Iterator[tuple[Any, ...]]:
    """The one walk behind both: every rescan runs through this loop, so it does per file no
    more than the stat a bare ``os.scandir`` walk does."""
    root = os.fspath(Path(directory).absolute())
    excluded = frozenset(exclude)
    is_regular, is_directory = S_ISREG, S_ISDIR  # locals: the loop below runs once per file
    stack = [("", root)]
    while stack:
        prefix, path = stack.pop()
        try:
            dir_fd = _open_directory(path, follow=not prefix)
        except OSError as exc:
            if prefix:
                continue  # an unreadable subdirectory must not hide the rest
            if isinstance(exc, FileNotFoundError | NotADirectoryError):
                return
            raise
        try:
            names: list[str] = []
            stats: list[os.stat_result] = []
            mtimes: list[int] = []
            ctimes: list[int] = []
            sizes: list[int] = []
            add_name, add_stat = names.append, stats.append
            add_mtime, add_ctime, add_size = mtimes.append, ctimes.append, sizes.append
            try:
                with os.scandir(dir_fd) as listing:
                    for entry in listing:
                        name = entry.name
                        # What classify says, inlined: this runs once per file of every rescan.
                        if (
                            name[0] == "."
                            or not name.endswith(".md")
                            or (name == INDEX_FILENAME and not indexes)
                            or (".remote-" in name and is_conflict_copy(name))
                        ):
                            if entry.is_dir(follow_symlinks=False) and not _skipped_dir(
                                prefix, name, excluded
                            ):
                                stack.append((f"{prefix}{name}/", f"{path}/{name}"))
                            continue
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue  # deleted since the directory was listed
                        if is_regular(st.st_mode):
                            add_name(name)
                            if stamps:
                                add_mtime(st.st_mtime_ns)
                                add_ctime(st.st_ctime_ns)
                                add_size(st.st_size)
                            else:
                                add_stat(st)
                        elif is_directory(st.st_mode):
                            if not _skipped_dir(prefix, name, excluded):
                                stack.append((f"{prefix}{name}/", f"{path}/{name}"))
                        elif untouchable is not None:
                            untouchable.add(prefix + name)
            except OSError:
                if prefix:
                    continue
                raise
            if stamps:
                yield (prefix, dir_fd, names, mtimes, ctimes, sizes)
            else:
                yield (prefix, dir_fd, names, stats)
        finally:
            os.close(dir_fd)


def walk_store(
    directory: str | os.PathLike[str],
    exclude: Collection[str] = (),
    *,
    indexes: bool = True,
    untouchable: set[str] | None = None,
) -> Iterator[StoreFile]:
    """Every memory file of the store in `directory`, one at a time: :func:`walk_store_dirs`,
    whose rules it follows."""
    for prefix, dir_fd, names, stats in walk_store_dirs(
        directory, exclude, indexes=indexes, untouchable=untouchable
    ):
        for name, st in zip(names, stats, strict=True):
            # tuple.__new__: NamedTuple's own constructor is Python code.
            yield _new_tuple(StoreFile, (prefix + name, prefix, name, dir_fd, st))


def read_store_file(found: StoreFile) -> bytes | None:
    """The content of a file :func:`walk_store` found; None when it went away meanwhile."""
    try:
        return read_file(found.name, dir_fd=found.dir_fd, st=found.stat)
    except OSError:
        return None


# A file changed this recently may be written again within the same clock tick, which keeps its
# stat as it was: results read from it are not remembered yet.
SETTLED_NS = 1_000_000_000


def settled_signature(st: os.stat_result) -> tuple[int, int, int, int] | None:
    """What changes with every write of a file, atomic or in place (inode, size, mtime and
    ctime in ns), to remember results by; None while the file changed in the last second."""
    if time.time_ns() - st.st_ctime_ns < SETTLED_NS:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_store(
    directory: str | os.PathLike[str], exclude: Collection[str] = ()
) -> dict[str, bytes]:
    """The content of every memory file of the store in `directory`, by key (:func:`walk_store`;
    a file that goes away meanwhile is left out)."""
    files = {}
    for found in walk_store(directory, exclude):
        data = read_store_file(found)
        if data is not None:
            files[found.key] = data
    return files


# directory -> key -> (stat signature, checksum), as of the last `store_checksums` of it.
_checksum_memo: dict[str, dict[str, tuple[tuple[int, ...], str]]] = {}


def store_checksums(
    directory: str | os.PathLike[str], exclude: Collection[str] = ()
) -> dict[str, str]:
    """The :func:`checksum` of every file :func:`read_store` reads, reading only files whose
    stat changed since the last call (see :func:`settled_signature`): protocol clients ask for
    every checksum before each push."""
    previous = _checksum_memo.get(os.fspath(directory), {})
    memo: dict[str, tuple[tuple[int, ...], str]] = {}
    sums = {}
    for found in walk_store(directory, exclude):
        signature = settled_signature(found.stat)
        known = previous.get(found.key)
        if signature is not None and known is not None and known[0] == signature:
            sums[found.key] = known[1]
            memo[found.key] = known
            continue
        data = read_store_file(found)
        if data is None:
            continue
        sums[found.key] = checksum(data)
        if signature is not None:
            memo[found.key] = (signature, sums[found.key])
    _checksum_memo[os.fspath(directory)] = memo
    return sums


def checksum(data: bytes) -> str:
    """``sha256:<lowercase hex>`` of `data`: how every memhub part names a file's content
    (docs/design.md §10)."""
    return CHECKSUM_PREFIX + hashlib.sha256(data).hexdigest()


class FileRejected(ValueError):
    """A memory file that must not be written or sent; nothing was.

    `code` is stable (``invalid_key``, ``invalid_utf8``, ``binary_content``,
    ``entry_too_large``, ``secret_detected``, and the writers' ``precondition_failed`` …) and
    `details` says which key and why, never a secret's value.
    """

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.details: dict[str, Any] = dict(details or {})


def _check_key(key: str, exclude: Collection[str], written: bool = False) -> None:
    try:
        check_key(key)
        if written:
            check_key_name(key)
    except PathTraversalError as exc:
        raise FileRejected("invalid_key", str(exc), {"key": key, "rule": exc.rule}) from None
    kind = classify(key, exclude)
    if kind not in (FileKind.TOPIC, FileKind.INDEX):
        raise FileRejected(
            "invalid_key", f"{key!r} is not a memory file: {kind.value}", {"key": key}
        )


def entry_path(root: str | os.PathLike[str], key: str, exclude: Collection[str] = ()) -> Path:
    """The path of memory file `key` in the store at `root`: the key must be safe
    (docs/design.md §4) and name a memory file of the store (:func:`classify`), else
    :class:`FileRejected` with code ``invalid_key``."""
    found = entry_paths(root, [key], exclude)[key]
    if isinstance(found, FileRejected):
        raise found
    return found


def entry_paths(
    root: str | os.PathLike[str], keys: Iterable[str], exclude: Collection[str] = ()
) -> dict[str, Path | FileRejected]:
    """:func:`entry_path` of each of `keys`: its path, or the error it raises (each directory
    of the store resolved once: :func:`validate_keys`)."""
    found: dict[str, Path | FileRejected] = {}
    checked = []
    for key in keys:
        try:
            _check_key(key, exclude)
            checked.append(key)
        except FileRejected as exc:
            found[key] = exc
    for key, path in validate_keys(Path(root), checked).items():
        try:
            if isinstance(path, PathTraversalError):
                raise path
            if path.is_dir():
                raise PathTraversalError("key-is-folder", key)
            found[key] = path
        except PathTraversalError as exc:
            found[key] = FileRejected("invalid_key", str(exc), {"key": key, "rule": exc.rule})
    return found


def check_key_neighbours(keys: Iterable[str], existing: Iterable[str]) -> None:
    """:class:`FileRejected` (``invalid_key``) when a key to be written would be one file with
    another on macOS or Windows, or lie under a file (``check_new_keys``, docs/design.md §4)."""
    try:
        check_new_keys(keys, existing)
    except PathTraversalError as exc:
        raise _neighbour_refused(exc) from None


def store_keys(keys: Iterable[str], on_disk: Collection[str]) -> dict[str, str]:
    """Each of `keys` → the key it is written under (``stored_keys``, docs/design.md §4);
    :class:`FileRejected` (``invalid_key``) naming both when two would be written as one."""
    try:
        return stored_keys(keys, on_disk)
    except PathTraversalError as exc:
        raise _neighbour_refused(exc) from None


def _neighbour_refused(exc: PathTraversalError) -> FileRejected:
    details = {"key": exc.key, "rule": exc.rule}
    if exc.beside is not None:
        details["beside"] = exc.beside
    return FileRejected("invalid_key", str(exc), details)


def secret_hits(key: str, text: str) -> list[dict[str, Any]]:
    """What the fast secret rules find in `key` (line 0) and `text`, as reported everywhere:
    rule, label, line."""
    return [
        {"key": key, "rule_id": hit.rule_id, "label": hit.label, "line": hit.line}
        for hit in [*scan_name(key), *scan_text(text)]
    ]


def check_entry(
    key: str,
    content: str | bytes,
    *,
    exclude: Collection[str] = (),
    max_bytes: int = MAX_ENTRY_BYTES,
    secrets: bool = True,
) -> str:
    """The text of a memory file that may be written or sent, or :class:`FileRejected`: a key
    that is no memory file, content that is not UTF-8 (``invalid_utf8``) or larger than
    `max_bytes` (``entry_too_large``), holds NUL (``binary_content``) or, with `secrets`, what
    the fast secret rules flag (``secret_detected``, `details["entries"]` by rule and line).
    The key must also meet the naming rules of what is written (``check_key_name``)."""
    _check_key(key, exclude, written=True)
    if isinstance(content, str):
        text = content
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise FileRejected("invalid_utf8", f"{key}: not valid UTF-8", {"key": key}) from None
    else:
        data = content
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FileRejected("invalid_utf8", f"{key}: not valid UTF-8", {"key": key}) from None
    if len(data) > max_bytes:
        raise FileRejected(
            "entry_too_large",
            f"{key}: {len(data):,} bytes, over the {max_bytes:,}-byte limit",
            {"key": key, "size": len(data), "max_bytes": max_bytes},
        )
    if "\0" in text:
        raise FileRejected("binary_content", f"{key}: contains NUL bytes", {"key": key})
    if secrets:
        hits = secret_hits(key, text)
        if hits:
            raise _secret_detected(hits)
    return text


def _secret_detected(hits: list[dict[str, Any]]) -> FileRejected:
    keys = sorted({hit["key"] for hit in hits})
    where = ", ".join(f"{hit['key']} ({hit['label']}, {place(hit['line'])})" for hit in hits)
    return FileRejected(
        "secret_detected",
        f"refused: {where}: what looks like a secret (nothing was written)",
        {"entries": hits, "keys": keys},
    )


def check_entries(
    entries: Mapping[str, str | bytes],
    *,
    exclude: Collection[str] = (),
    max_bytes: int = MAX_ENTRY_BYTES,
    secrets: bool = True,
) -> dict[str, str]:
    """:func:`check_entry` of every entry, all or nothing: the first bad key, size or encoding
    raises; then, with `secrets`, every secret of every entry is reported in one
    ``secret_detected``."""
    texts = {
        key: check_entry(key, content, exclude=exclude, max_bytes=max_bytes, secrets=False)
        for key, content in entries.items()
    }
    if not secrets:
        return texts
    hits = [hit for key, text in texts.items() for hit in secret_hits(key, text)]
    if hits:
        raise _secret_detected(hits)
    return texts


def write_entries(
    root: str | os.PathLike[str], entries: Mapping[str, bytes], exclude: Collection[str] = ()
) -> None:
    """Write memory files of the store at `root` atomically (docs/design.md §20), creating
    their folders; every key is checked (:func:`entry_path`) before anything is written."""
    paths = {entry_path(root, key, exclude): data for key, data in entries.items()}
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic_files(paths)


T = TypeVar("T")


def split_batches(
    items: Iterable[T], size: Callable[[T], int], limit: int = MAX_BATCH_BYTES, overhead: int = 0
) -> Iterator[list[T]]:
    """Consecutive groups of `items` whose bodies (`overhead` plus each item's `size`) stay
    below `limit` bytes; an item too big for any batch goes alone."""
    batch: list[T] = []
    total = overhead
    for item in items:
        item_size = size(item)
        if batch and total + item_size >= limit:
            yield batch
            batch, total = [], overhead
        batch.append(item)
        total += item_size
    if batch:
        yield batch
