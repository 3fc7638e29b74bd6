"""The consolidation lock a memory directory shares with the agents that use it
(docs/design.md §14.1).

`<memory dir>/.consolidate-lock` does two jobs, exactly as in Claude Code: its content is the
PID of whoever is consolidating the directory now, and its mtime is when the directory was
last consolidated. A lock whose PID is not running, or that is older than an hour, is stale
and may be taken over. Taking it means writing one's own PID and reading the file back: when
two take it at once, the last write wins and the other sees someone else's PID and backs off.
When a run fails, the previous mtime is put back (the file is removed when there was none), so
a failure never counts as a consolidation.

Because memhub takes the same file in a directory on this host, a local agent and memhub never
consolidate one directory at the same time. A lock that is not a number, is a directory, or
cannot be read is treated as stale and reported, never trusted.

memhub leaves the file empty once a run is over (the mtime still says when it ran): its task
worker lives on after the run, and its PID must not hold the lock for the hour after.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from memapp.memdir.atomic import write_atomic_bytes

__all__ = [
    "LOCK_NAME",
    "STALE_AFTER_S",
    "LockState",
    "LockUnavailable",
    "lock_path",
    "pid_running",
    "read_lock",
    "release_lock",
    "restore_lock",
    "try_acquire_lock",
]

LOCK_NAME = ".consolidate-lock"
STALE_AFTER_S = 3600.0  # a holder older than this has died without cleaning up
_MAX_LOCK_BYTES = 64  # a PID and a newline; anything longer is not a lock this protocol wrote


class LockUnavailable(OSError):
    """The lock file cannot be written (a non-empty directory in its place, a read-only
    directory); nobody may consolidate the directory through it."""


@dataclass(frozen=True)
class LockState:
    """What the lock file says now.

    `mtime` is the last consolidation (seconds since the epoch), None when there is no usable
    file. `pid` is the holder's PID as written, None when the file is empty or not a number.
    `problem` says why the file was not trusted (not a number, a directory, unreadable).
    """

    exists: bool
    mtime: float | None
    pid: int | None
    problem: str = ""

    def held(self, now: float | None = None) -> bool:
        """Whether a live process holds it: a running PID, written less than an hour ago."""
        if self.pid is None or self.mtime is None:
            return False
        now = time.time() if now is None else now
        return now - self.mtime < STALE_AFTER_S and pid_running(self.pid)


def lock_path(directory: str | os.PathLike[str]) -> Path:
    return Path(directory) / LOCK_NAME


def pid_running(pid: int) -> bool:
    """Whether a process with this PID exists on this host (signal 0 checks without sending)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user's process
    except OverflowError:
        return False
    return True


def read_lock(directory: str | os.PathLike[str]) -> LockState:
    """The lock of `directory` as it is now; never raises for a lock that is odd or missing."""
    path = lock_path(directory)
    try:
        st = path.lstat()
    except FileNotFoundError:
        return LockState(False, None, None)
    except OSError as exc:
        return LockState(True, None, None, f"cannot be read ({exc.strerror or exc})")
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        return LockState(True, st.st_mtime, None, f"is {kind}")
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_LOCK_BYTES + 1)
    except OSError as exc:
        return LockState(True, st.st_mtime, None, f"cannot be read ({exc.strerror or exc})")
    text = raw.decode("ascii", "replace").strip()
    if not text:
        return LockState(True, st.st_mtime, None)
    if len(raw) > _MAX_LOCK_BYTES or not text.isdigit():
        return LockState(True, st.st_mtime, None, "does not hold a PID")
    return LockState(True, st.st_mtime, int(text))


def try_acquire_lock(
    directory: str | os.PathLike[str], pid: int | None = None, now: float | None = None
) -> tuple[float | None, LockState] | None:
    """Take the lock of `directory` for `pid` (this process by default).

    Returns None when a live process holds it, or when another taker won the race (the file
    read back holds someone else's PID). Otherwise the lock is ours: returns the previous
    last-consolidation time (None when there was no usable lock), to hand to `restore_lock`
    if the run fails, and the state found before taking it. Raises LockUnavailable when the
    file cannot be written.
    """
    pid = os.getpid() if pid is None else pid
    before = read_lock(directory)
    if before.held(now):
        return None
    path = lock_path(directory)
    if before.problem.startswith("is a directory"):
        try:
            path.rmdir()  # an empty directory where the lock goes: nothing in it to lose
        except OSError as exc:
            raise LockUnavailable(
                exc.errno or errno.EEXIST, f"{path} is a directory that is not empty"
            ) from None
    try:
        write_atomic_bytes(path, f"{pid}\n".encode())
    except OSError as exc:
        raise LockUnavailable(exc.errno or errno.EIO, f"cannot write {path}: {exc}") from None
    if read_lock(directory).pid != pid:
        return None
    prior = before.mtime if before.exists and before.problem != "is a directory" else None
    return prior, before


def _stamp(path: Path, mtime: float) -> None:
    write_atomic_bytes(path, b"")
    os.utime(path, (mtime, mtime))


def release_lock(directory: str | os.PathLike[str], consolidated_at: float) -> None:
    """End a successful run: the file is left empty (no holder) with `consolidated_at`, the
    time the run took the lock, as its mtime."""
    _stamp(lock_path(directory), consolidated_at)


def restore_lock(directory: str | os.PathLike[str], prior_mtime: float | None) -> None:
    """Undo `try_acquire_lock` after a failed run: the previous mtime comes back (with no
    holder), or the file goes when there was none before."""
    path = lock_path(directory)
    if prior_mtime is None:
        path.unlink(missing_ok=True)
        return
    _stamp(path, prior_mtime)
