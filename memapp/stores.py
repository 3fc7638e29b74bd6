"""Keeping a store's mirror in step with its directory on disk."""

from __future__ import annotations

from pathlib import Path

from django.utils import timezone

from memapp.memdir.scan import scan_memory_files
from memapp.models import Store


def refresh_store(store: Store) -> Store:
    """Rescan the store's directory (incrementally: unchanged files are only stat'ed)."""
    headers = scan_memory_files(Path(store.path), limit=None, exclude=tuple(store.exclude))
    store.file_count = len(headers)
    store.scanned_at = timezone.now()
    store.save(update_fields=["file_count", "scanned_at"])
    return store
