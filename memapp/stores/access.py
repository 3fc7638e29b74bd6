"""Fetch-and-authorize helpers: a store or memory the user may not see is a 404, never a 403."""

from __future__ import annotations

from django.http import Http404

from memapp.stores.models import MemoryFile, Store


def get_store_for_user(user, store_id: int) -> Store:
    try:
        return Store.objects.visible_to(user).select_related("project").get(pk=store_id)
    except Store.DoesNotExist:
        raise Http404("No such store.") from None


def get_memory_for_user(user, store_id: int, path: str) -> tuple[Store, MemoryFile]:
    store = get_store_for_user(user, store_id)
    try:
        return store, store.files.get(path=path)
    except MemoryFile.DoesNotExist:
        raise Http404("No such memory.") from None
