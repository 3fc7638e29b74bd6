"""Crash-safe writes and deletes inside a memory directory.

A reader (an agent, a scan, team sync) must only ever see the old file or the new one, never a
half-written one. `write_atomic` writes a temporary file beside the target, makes it durable, then
renames it over the target (`rename(2)` is atomic within a file system) and makes the rename
durable by syncing the directory.

The temporary file is named `.<target name>.<random>.tmp`: hidden, and never ending in `.md`, so a
scan of `*.md` files cannot pick it up, even after a crash leaves it behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = [
    "delete_file",
    "keep_mtime",
    "write_atomic",
    "write_atomic_bytes",
    "write_atomic_files",
]

# Mode for new files before the process umask is applied, as `open(path, "w")` would use.
_NEW_FILE_MODE = 0o666
_TEMP_ATTEMPTS = 100
# write_atomic_files: threads that wait on fsync together (the journal commits the fsyncs that
# wait at once together: 1,000 files took 0.55 s with 16, 0.7 s with 4), and the batch size
# worth them.
_WRITERS = 16
_PARALLEL_FROM = 16


def keep_mtime(path: str | os.PathLike[str], mtime_ms: object) -> None:
    """Give a file just written the modification time it has where it came from (`mtime_ms`,
    none later than now; anything but a whole number of ms, None included, leaves it as
    written): agents and memhub read a memory's age from it, and a copy is not a new memory.
    The access time becomes now."""
    if not isinstance(mtime_ms, int) or isinstance(mtime_ms, bool) or mtime_ms < 0:
        return
    now = time.time_ns()
    os.utime(path, ns=(now, min(mtime_ms * 1_000_000, now)))


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace the file at `path` with `text` encoded as UTF-8, atomically.

    Raises `TypeError` if `text` is not a `str` and `UnicodeEncodeError` if it cannot be encoded
    (lone surrogates); both before anything is written. See `write_atomic_bytes` for the rest.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(
    path: str | os.PathLike[str], data: bytes, *, durable: bool = True, mode: int | None = None
) -> None:
    """Replace the file at `path` with `data`, atomically and durably.

    `durable=False` skips both fsyncs: readers still see the old file or the new one, but a power
    cut may lose the write. Only for copies that are rebuilt from elsewhere after a crash (team
    sync's working clone, reset to its last commit before each use).

    - An existing file keeps its permission bits. A new file gets 0o666 minus the process umask
      (0o644 under the usual umask 022), exactly like a file created with `open()`.
    - `mode` (e.g. 0o600 for a file holding a token) sets the bits instead, new file or not; the
      temporary file has them from the start, so the content is never readable by others.
    - A symlink at `path` is replaced by a regular file; the write never goes through the link
      (the store root check is done on paths, and a link could point anywhere).
    - The parent directory must exist (`FileNotFoundError` otherwise).
    - On any failure the temporary file is removed, the target is left as it was, and the
      exception propagates.
    """
    _replace(path, data, fsync=durable, mode=mode)
    if durable:
        _fsync_directory(Path(path).parent)


def write_atomic_files(
    files: Mapping[Path, bytes], meanwhile: Callable[[], object] | None = None
) -> dict[Path, os.stat_result]:
    """`write_atomic_bytes` of many files (a pull writing a thousand), faster: a few at a time,
    so that the disk overlaps their fsyncs, and one fsync per directory at the end rather than
    one per file. Each file is replaced atomically; all are durable once this returns. A
    failure propagates; each file is then either its old self or wholly new.

    `meanwhile` runs in the calling thread while the writes wait on the disk. Returns each
    file's stat as its write left it (taken from the written file itself, not its path)."""
    items = list(files.items())
    stats: dict[Path, os.stat_result] = {}
    try:
        if len(items) < _PARALLEL_FROM:
            for path, data in items:
                stats[path] = _replace(path, data, fsync=True)
            if meanwhile is not None:
                meanwhile()
        else:
            _replace_in_threads(items, stats, meanwhile)
    finally:  # what was written is durable even when something failed
        for directory in {path.parent for path in stats}:
            _fsync_directory(directory)
    return stats


def _replace_in_threads(
    items: list[tuple[Path, bytes]],
    stats: dict[Path, os.stat_result],
    meanwhile: Callable[[], object] | None,
) -> None:
    """`_replace` of every item (its stat into `stats`), each of `_WRITERS` threads taking
    every `_WRITERS`-th one (a thread pool's future per file cost 20–35 ms of CPU for a
    thousand files, this 7 ms), and `meanwhile` in this thread. Raises the first failure
    once every thread stopped."""
    import threading  # not loaded by a hook's one write

    failures: list[BaseException] = []

    def write(share: list[tuple[Path, bytes]]) -> None:
        try:
            for path, data in share:
                stats[path] = _replace(path, data, fsync=True)
        except BaseException as exc:  # re-raised in the calling thread
            failures.append(exc)

    threads = [
        threading.Thread(target=write, args=(items[i::_WRITERS],), name="write-atomic")
        for i in range(_WRITERS)
    ]
    started = []
    try:
        for thread in threads:
            thread.start()
            started.append(thread)
        if meanwhile is not None:
            meanwhile()
    finally:
        for thread in started:
            thread.join()
    if failures:
        raise failures[0]


def _replace(
    path: str | os.PathLike[str], data: bytes, *, fsync: bool, mode: int | None = None
) -> os.stat_result:
    """Write `data` to a temporary file beside `path` and rename it over `path` (the
    directory's entry not yet synced); returns the file's stat after the rename, or, when
    another writer changed it in the meantime, its stat before the rename: one no later stat
    of the file matches (the rename set a new ctime), so a scan trusting it reads it again."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    target = Path(path)
    directory = target.parent
    if mode is None:
        mode = _existing_mode(target)
    fd, temp = _create_temp(directory, target.name, _NEW_FILE_MODE if mode is None else mode)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if fsync:
                os.fsync(fd)
            before = os.fstat(fd)
            temp.replace(target)
            after = os.fstat(fd)  # the rename sets its ctime
            if (after.st_mtime_ns, after.st_size) != (before.st_mtime_ns, before.st_size):
                return before
            return after
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise


def delete_file(path: str | os.PathLike[str], *, missing_ok: bool = False) -> bool:
    """Delete the file at `path` and make the deletion durable.

    Returns True when a file was deleted, False when it was already gone and `missing_ok` is set
    (otherwise `FileNotFoundError` propagates). A symlink is removed, not its target.
    """
    target = Path(path)
    try:
        target.unlink()
    except FileNotFoundError:
        if missing_ok:
            return False
        raise
    _fsync_directory(target.parent)
    return True


def _existing_mode(target: Path) -> int | None:
    try:
        st = target.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return None
    return stat.S_IMODE(st.st_mode)


def _create_temp(directory: Path, name: str, mode: int) -> tuple[int, Path]:
    # Not tempfile.mkstemp: it creates files 0o600 regardless of umask, and a new memory file
    # should get the same mode as any other file the user creates.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_TEMP_ATTEMPTS):
        temp = directory / f".{name}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(temp, flags, mode), temp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a unique temporary file in {directory}")


def _fsync_directory(directory: Path) -> None:
    # Some file systems refuse fsync on a directory (EINVAL). By then the rename or unlink has
    # already happened and is visible, so reporting a failure would mislead the caller.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
