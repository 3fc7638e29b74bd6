"""Cross-process locks for memhub's writers."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib

from django.conf import settings

from memapp.models import Store


@contextlib.contextmanager
def store_lock(store: Store):
    """One writer per store across processes (MEMORY.md edits are read-modify-write).

    The lock file lives in memhub's data dir, never in the agent's memory directory.
    """
    locks = settings.MEMHUB_DATA_DIR / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(store.path.encode()).hexdigest()[:32]
    with (locks / f"{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
