"""Scanning a memory directory: the headers of its topic files, newest first (docs/design.md §6).

A scan never writes: files and directories are opened read-only with ``O_NOATIME`` where the
kernel allows it (our own files, or as root), so neither mtimes nor atimes change (mtimes order
every scan and give every memory its age).

Which files are scanned is the store's file rule (:mod:`memapp.memdir.store_files`, one walk for
every part of memhub): symlinks inside the directory are skipped, files and directories alike (a
link could lead outside the store, to ``~/.ssh``, say), and so are hidden names, daily logs and
conflict copies. The directory passed in may itself be a symlink (a memory dir kept on another
disk).

Rescans are incremental: a :class:`ScanCache` remembers each file's header under its
``(mtime, size, ctime)``, so a rescan of an unchanged directory only stats its files. The ctime is
there because it cannot be set back: a peer that rewrites a file (in place or by renaming a new
one over it) and restores its mtime still changes it.
"""

from __future__ import annotations

import dataclasses
import datetime
import operator
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .frontmatter import (
    BINARY_FILE,
    HEADER_LINES,
    HEADER_NOT_CLOSED,
    TypeForm,
    decode_bytes,
    parse_header,
)
from .store_files import open_store_file, walk_store_stamps

__all__ = [
    "MAX_HEAD_BYTES",
    "detect_type_form",
    "header_of",
    "KnownFile",
    "MemoryHeader",
    "ScanCache",
    "StoreScan",
    "format_manifest",
    "format_mtime",
    "scan_memory_files",
    "scan_store",
]

# A scan reads at most the first 30 lines and at most this many bytes of a file, so a 10 MB file
# (or a 10 MB single line) costs no more than a small one.
MAX_HEAD_BYTES = 64 * 1024
_FIRST_READ = 8 * 1024  # enough for the first 30 lines of nearly every memory


@dataclass(frozen=True, slots=True)
class MemoryHeader:
    """One topic file as a scan sees it.

    ``path`` is relative to the scanned directory, ``/``-separated. ``problem`` says why the
    header could not be read (invalid YAML, not closed within 30 lines, binary, unreadable...).
    ``body_start``: where the body begins in the decoded text, so that a reader of the whole
    file (the mirror) need not parse the header again. ``ctime_ns``: the file's ctime when it
    was read (0 for a header made from bytes), which a mirror keeps to know a rewrite that
    kept the mtime and size.
    """

    path: str
    mtime_ms: int
    size: int
    name: str | None
    description: str | None
    type: str | None
    type_form: TypeForm | None
    problem: str | None
    has_frontmatter: bool = False
    body_start: int = field(default=0, compare=False)
    ctime_ns: int = field(default=0, compare=False)


# st_mtime_ns, st_size, st_ctime_ns, header
_Entry = tuple[int, int, int, MemoryHeader]


class _Dir(NamedTuple):
    """One directory as last scanned: its files' names, ctimes and sizes in listing order
    (compared whole, in C, on a rescan) and each file's entry by name. No mtimes: setting one
    sets the ctime too (which cannot be set back)."""

    names: list[str]
    ctimes: list[int]
    sizes: list[int]
    entries: dict[str, _Entry]


_NO_DIR = _Dir([], [], [], {})
_Key = tuple[str, frozenset[str]]  # directory, excluded top-level names


@dataclass(frozen=True, slots=True, eq=False)
class StoreScan:
    """A directory as last scanned: its files' stamps and headers by subdirectory ("" for the
    top, else "sub/dir/") and name, how many there are, and all headers in scan order (newest
    first; never to be mutated). :func:`scan_store` answers with the same object for as long as
    nothing changed, so ``is`` tells a caller that nothing did since it last looked."""

    dirs: dict[str, _Dir]
    count: int
    ordered: list[MemoryHeader]


_NOTHING = StoreScan({}, 0, [])


class ScanCache:
    """Headers of files already read, by directory, each valid while its file's stat is unchanged.

    Each scan of a directory replaces that directory's entries with the files it found, so files
    since deleted do not linger; at most ``max_directories`` directories are kept (least recently
    scanned dropped first). Safe to share between threads: snapshots are never mutated once
    published, and publishing takes a lock.

    ``hits`` counts files whose header came from the cache (stat only), ``misses`` files opened.
    """

    def __init__(self, max_directories: int = 256) -> None:
        self.max_directories = max_directories
        self._dirs: OrderedDict[_Key, StoreScan] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _get(self, key: _Key) -> StoreScan:
        return self._dirs.get(key, _NOTHING)

    def _put(self, key: _Key, snapshot: StoreScan, hits: int, misses: int) -> None:
        with self._lock:
            self._dirs[key] = snapshot
            self._dirs.move_to_end(key)
            while len(self._dirs) > self.max_directories:
                self._dirs.popitem(last=False)
            self.hits += hits
            self.misses += misses

    def __len__(self) -> int:
        """Number of files cached, over all directories."""
        with self._lock:
            return sum(snapshot.count for snapshot in self._dirs.values())

    def clear(self) -> None:
        with self._lock:
            self._dirs.clear()
            self.hits = self.misses = 0


_default_cache = ScanCache()


def scan_memory_files(
    directory: str | os.PathLike[str],
    limit: int | None = 200,
    exclude: Iterable[str] = (),
    cache: ScanCache | None = None,
) -> list[MemoryHeader]:
    """Headers of the topic files of the store in ``directory``: its memory files at any depth
    but the ``MEMORY.md`` indexes (the file rule of docs/design.md §6a: hidden names, daily
    logs, conflict copies and symlinks are not among them).

    Newest mtime first (ties by path), at most ``limit`` of them (``None``: all). ``exclude``
    names top-level entries that are stores of their own, e.g. ``("team",)``. Only the
    first 30 lines (and at most :data:`MAX_HEAD_BYTES`) of each file are read, and only when the
    file changed since ``cache`` (default: one cache per process) last saw it.

    A missing directory gives ``[]``. Subdirectories that cannot be listed are skipped; a file
    that cannot be read or parsed is listed with its ``problem``. Raises ``OSError`` only when
    ``directory`` exists but cannot be listed.
    """
    return scan_store(directory, exclude, cache).ordered[:limit]


class KnownFile(NamedTuple):
    """A file a writer just wrote: its header as a scan would read it (:func:`header_of`, with
    the write's mtime) and the stamps the write left. While the file still has them (the same
    inode, mtime, ctime and size: every later write changes the ctime), it holds what was
    written, and a scan takes this header instead of reading the file."""

    header: MemoryHeader
    mtime_ns: int
    ctime_ns: int
    size: int
    inode: int

    @classmethod
    def written(cls, header: MemoryHeader, st: os.stat_result) -> KnownFile:
        """`header` (parsed before the write ended) with the stat the write left."""
        mtime_ms = st.st_mtime_ns // 1_000_000
        header = dataclasses.replace(header, mtime_ms=mtime_ms, ctime_ns=st.st_ctime_ns)
        return cls(header, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def scan_store(
    directory: str | os.PathLike[str],
    exclude: Iterable[str] = (),
    cache: ScanCache | None = None,
    known: Mapping[str, KnownFile] | None = None,
) -> StoreScan:
    """:func:`scan_memory_files` of every file, as the :class:`StoreScan` it keeps in `cache`:
    the very object of the last scan when no file changed (the mirror's rescan then stops).
    A changed file in `known` (by path) that is still as written is not read: its header is
    that very object, so a caller can tell."""
    if cache is None:
        cache = _default_cache
    root = str(Path(directory).absolute())
    excluded = frozenset((exclude,) if isinstance(exclude, str) else exclude)
    key = (root, excluded)
    previous = cache._get(key)
    dirs: dict[str, _Dir] = {}
    count = misses = 0

    # The store's one walk (docs/design.md §6a) opens directories with O_NOATIME and hands
    # over each directory's files with their stamps (mtime, ctime, size; no stat results kept).
    # This runs once per file on every rescan: a directory whose names and stamps are those of
    # the last scan is compared whole by list comparisons in C, with no Python code per file.
    for prefix, dir_fd, names, mtimes, ctimes, sizes in walk_store_stamps(
        root, excluded, indexes=False
    ):
        count += len(names)
        before = previous.dirs.get(prefix, _NO_DIR)
        if before.ctimes == ctimes and before.names == names and before.sizes == sizes:
            dirs[prefix] = before
            continue
        entries: dict[str, _Entry] = {}
        lookup = before.entries.get
        for name, mtime_ns, ctime_ns, size in zip(names, mtimes, ctimes, sizes, strict=True):
            cached = lookup(name)
            if (
                cached is not None
                and cached[0] == mtime_ns
                and cached[1] == size
                and cached[2] == ctime_ns
            ):
                entries[name] = cached
            else:
                written = known.get(prefix + name) if known else None
                if written is not None and _still_written(written, name, dir_fd, ctime_ns):
                    header = written.header
                else:
                    header = _read_header(name, dir_fd, prefix + name, mtime_ns, size, ctime_ns)
                entries[name] = (mtime_ns, size, ctime_ns, header)
                misses += 1
        dirs[prefix] = _Dir(names, ctimes, sizes, entries)

    if not misses and count == previous.count:
        # The same files (each hit is a distinct cached one), unchanged: the same scan.
        cache._put(key, previous, count, 0)
        return previous
    items = [(prefix + name, e) for prefix, d in dirs.items() for name, e in d.entries.items()]
    # Two stable sorts with plain keys are much faster than one sort of tuples.
    items.sort(key=_first)
    items.sort(key=_newest_first)
    scan = StoreScan(dirs, count, [e[3] for _rel, e in items])
    cache._put(key, scan, count - misses, misses)
    return scan


_first = operator.itemgetter(0)


def _still_written(written: KnownFile, name: str, dir_fd: int, ctime_ns: int) -> bool:
    """Whether the file `name` is the one `written` describes (one more stat, for the inode,
    only when its ctime says it may be)."""
    if written.ctime_ns != ctime_ns:
        return False
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size) == (
        written.inode,
        written.mtime_ns,
        written.ctime_ns,
        written.size,
    )


def _newest_first(item: tuple[str, _Entry]) -> int:
    return -item[1][0]


def header_of(rel: str, data: bytes) -> MemoryHeader:
    """The header a scan reads from a file `rel` holding `data` (its first 30 lines), its
    mtime 0 until :meth:`KnownFile.written` sets it: for a writer that knows what it writes."""
    head, cut = _cut_head(data[:MAX_HEAD_BYTES], len(data))
    return _parse_head(head, cut, rel, 0, len(data))


def _read_header(
    name: str, dir_fd: int, rel: str, mtime_ns: int, size: int, ctime_ns: int
) -> MemoryHeader:
    mtime_ms = mtime_ns // 1_000_000
    try:
        data, cut = _read_head(name, dir_fd, size)
    except OSError as exc:
        unreadable = f"unreadable: {exc.strerror or exc}"
        return MemoryHeader(
            rel, mtime_ms, size, None, None, None, None, unreadable, ctime_ns=ctime_ns
        )
    return _parse_head(data, cut, rel, mtime_ms, size, ctime_ns)


def _parse_head(
    data: bytes, cut: bool, rel: str, mtime_ms: int, size: int, ctime_ns: int = 0
) -> MemoryHeader:
    text, problem = decode_bytes(data, final=not cut)
    if problem == BINARY_FILE:
        return MemoryHeader(rel, mtime_ms, size, None, None, None, None, problem, ctime_ns=ctime_ns)
    h = parse_header(text)
    if h.problem:
        if cut and not h.has_frontmatter and h.problem == HEADER_NOT_CLOSED:
            h_problem = f"the first {HEADER_LINES} lines exceed {MAX_HEAD_BYTES} bytes"
        else:
            h_problem = h.problem
        problem = f"{problem}; {h_problem}" if problem else h_problem
    return MemoryHeader(
        rel,
        mtime_ms,
        size,
        h.name,
        h.description,
        h.type,
        h.type_form,
        problem,
        h.has_frontmatter,
        h.body_start,
        ctime_ns,
    )


def _read_head(name: str, dir_fd: int, size: int) -> tuple[bytes, bool]:
    """The first 30 lines of a file, at most MAX_HEAD_BYTES: ``(bytes, cut by the byte cap)``."""
    fd = open_store_file(name, dir_fd=dir_fd)
    try:
        data = os.read(fd, _FIRST_READ)
        newlines = data.count(b"\n")
        if len(data) == _FIRST_READ and newlines < HEADER_LINES:
            buffer = bytearray(data)
            while len(buffer) < MAX_HEAD_BYTES and newlines < HEADER_LINES:
                more = os.read(fd, min(MAX_HEAD_BYTES - len(buffer), 4 * _FIRST_READ))
                if not more:
                    break
                buffer += more
                newlines += more.count(b"\n")
            data = bytes(buffer)
    finally:
        os.close(fd)
    return _cut_head(data, size, newlines)


def _cut_head(data: bytes, size: int, newlines: int | None = None) -> tuple[bytes, bool]:
    """The first 30 lines of `data` (a file's first bytes, at most MAX_HEAD_BYTES of its
    `size`): ``(bytes, cut by the byte cap)``."""
    if newlines is None:
        newlines = data.count(b"\n")
    if newlines >= HEADER_LINES:
        # Cut after the 30th line: a character boundary, so decoding stays exact.
        pos = -1
        for _ in range(HEADER_LINES):
            pos = data.find(b"\n", pos + 1)
        return data[: pos + 1], False
    return data, len(data) >= MAX_HEAD_BYTES and size > len(data)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def format_mtime(mtime_ms: int) -> str:
    """``2026-03-28T10:30:00.000Z``: a time in ms since the epoch as UTC ISO-8601 (as JS does)."""
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(mtime_ms // 1000))
    except (OverflowError, OSError, ValueError):
        moment = _EPOCH + datetime.timedelta(milliseconds=mtime_ms)  # may raise OverflowError
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return f"{stamp}.{mtime_ms % 1000:03d}Z"


def format_manifest(headers: Sequence[MemoryHeader]) -> str:
    """The manifest an agent's recall sees: one line per header (docs/design.md §6).

    ``- [type] relative/path.md (2026-03-28T10:30:00.000Z): description``; the type tag and the
    description are left out when absent or empty. Line breaks in a description become spaces so
    each header stays one line.
    """
    lines = []
    for h in headers:
        tag = f"[{h.type}] " if h.type else ""
        desc = h.description
        if desc:
            if not desc.isprintable():
                desc = " ".join(desc.splitlines())
            lines.append(f"- {tag}{h.path} ({format_mtime(h.mtime_ms)}): {desc}")
        else:
            lines.append(f"- {tag}{h.path} ({format_mtime(h.mtime_ms)})")
    return "\n".join(lines)


def detect_type_form(directory: str) -> TypeForm:
    """The type form new memories in ``directory`` should use (docs/design.md §2).

    The form most of the topic files directly in ``directory`` use, reading only their header
    lines; on a tie, the form of the newest of them; ``"top"`` when none has a type.
    """
    counts = {"top": 0, "metadata": 0}
    newest: TypeForm | None = None
    for header in scan_memory_files(directory, limit=None):
        if "/" not in header.path and header.type_form is not None:
            counts[header.type_form] += 1
            newest = newest or header.type_form
    if counts["metadata"] > counts["top"]:
        return "metadata"
    if counts["metadata"] == counts["top"] and newest == "metadata":
        return "metadata"
    return "top"
