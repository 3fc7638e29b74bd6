"""The server's changes to a private memory dir, downloaded at session start (docs/design.md
§18): the download half of `memhub-agent sync`, by its rules and on its state.

Each key is decided from the same three checksums as sync (local L, server R, last synced B),
and only the server's side is taken: a key unchanged here since the last sync (L = B) and
changed on the server is written, or deleted when the server deleted it. Everything else, a
local change or a file changed on both sides, is left for `memhub-agent sync` to settle, so a
local edit is never overwritten. Nothing is uploaded.

The server's answer already holds the text of each differing file, so nothing is written
unless the whole answer arrived; each file is written atomically, and not at all when it
changed since it was read or when too little time is left.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from memapp.client.config import private_dir
from memapp.client.sync import as_stored, is_syncable_key, plan_sync, scan_local
from memapp.client.sync_state import (
    exclusive,
    load_base,
    local_checksum,
    save_base,
    state_identity,
    state_path,
)
from memapp.memdir.atomic import delete_file, keep_mtime, write_atomic
from memapp.memdir.keys import PathTraversalError, validate_key
from memapp.memdir.store_files import checksum

__all__ = ["MIN_WRITE_SECONDS", "pull_changes"]

# A pull starts writing only with this much time left: writes are quick, but a hook whose
# budget runs out is ended, and a file is never left half-decided.
MIN_WRITE_SECONDS = 0.1


class _Busy(Exception):
    """A sync of this memory dir is running: it will take the server's changes itself."""


def _target(memory_dir: Path, key: str, name: str) -> Path | None:
    """The local path of a key from the server (`name`: the local file's, as sync keeps it),
    or None when it may not be written here."""
    if not is_syncable_key(key):
        return None
    try:
        return validate_key(memory_dir, name)
    except PathTraversalError:
        return None


def pull_changes(
    server: str,
    store_id: int,
    memory_dir: Path,
    state_dir: Path,
    checksums: dict[str, str],
    files: dict[str, str],
    *,
    scanned: tuple[dict[str, str], set[str]] | None = None,
    writing: threading.Lock | None = None,
    time_left: Callable[[], float] = lambda: float("inf"),
    mtimes: dict[str, int] | None = None,
) -> list[str]:
    """Take the server's changes (`checksums` of every file, `files` the text of those that
    differ, `mtimes` their modification times in ms, kept: the memories' ages) into
    `memory_dir`; returns the keys written or deleted here. `scanned` is the
    `scan_local` of the memory dir made just before (made now when None); `writing` is held
    while files are written; nothing is written when `time_left()` is under
    MIN_WRITE_SECONDS, nor while a sync of this memory dir runs."""
    changed: list[str] = []
    path = state_path(state_dir, server, store_id, memory_dir)
    identity = state_identity(server, store_id, memory_dir)
    private_dir(state_dir)
    with contextlib.suppress(_Busy), exclusive(path.with_suffix(".lock"), _Busy()):
        base = load_base(path, identity)
        local = as_stored(*(scan_local(memory_dir) if scanned is None else scanned), checksums)
        remote = {k: v for k, v in checksums.items() if k not in local.untouchable}
        actions, settled = plan_sync(
            local.checksums, remote, {k: v for k, v in base.items() if k not in local.untouchable}
        )
        for key, value in settled.items():
            if value is None:
                base.pop(key, None)
            else:
                base[key] = value
        if time_left() < MIN_WRITE_SECONDS:
            return changed
        with writing or contextlib.nullcontext():
            for action in actions:
                if action.conflict or action.kind not in ("download", "delete_local"):
                    continue  # changed here, or on both sides: for sync to settle
                target = _target(memory_dir, action.key, local.spelt.get(action.key, action.key))
                if target is None or local_checksum(target) != action.local:
                    continue  # unsafe here, or changed since the scan: sync decides later
                if action.kind == "delete_local":
                    delete_file(target, missing_ok=True)
                    base.pop(action.key, None)
                else:
                    text = files.get(action.key)
                    if text is None or checksum(text.encode("utf-8")) != action.remote:
                        continue  # too big for this answer, or changed as it was read
                    target.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic(target, text)
                    keep_mtime(target, (mtimes or {}).get(action.key))
                    base[action.key] = action.remote
                changed.append(action.key)
            save_base(path, identity, base)
    return changed
