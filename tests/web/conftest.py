"""Alice's discovered stores, for the memory page tests."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Store
from tests.web.memory_pages import INDEX


@pytest.fixture
def stores(memory_base, alice) -> SimpleNamespace:
    """Alice's discovered stores; the private index has a heading and a hand-written note."""
    private = memory_base / "projects" / "-home-alice-app" / "memory"
    (private / "MEMORY.md").write_text(INDEX)
    discover_local_stores(memory_base)
    return SimpleNamespace(**{store.kind: store for store in Store.objects.all()})
