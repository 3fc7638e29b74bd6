"""Cross-process locks for memhub's writers, kept in the data dir (never in a memory directory)."""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager

from django.conf import settings

from memapp.memdir.filelock import file_lock
from memapp.stores.models import Store


def data_dir_lock(key: str, prefix: str = "") -> AbstractContextManager[None]:
    """A lock named after `key` (hashed, so any text is a safe file name)."""
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    return file_lock(settings.MEMHUB_DATA_DIR / "locks" / f"{prefix}{name}.lock")


def store_lock(store: Store) -> AbstractContextManager[None]:
    """One writer per store across processes (MEMORY.md edits are read-modify-write)."""
    return data_dir_lock(store.path)
