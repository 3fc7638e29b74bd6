"""The shared cache's table (memapp.stores.cache_table): a write is one statement, and `add`
keeps the meaning the shared-state locks rely on (only over an absent or expired key)."""

from __future__ import annotations

import pytest
from django.core.cache import cache, caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memapp.stores import cache_table
from memapp.stores.cache_table import DatabaseCache

pytestmark = pytest.mark.django_db


def test_the_default_cache_is_the_table_with_one_statement_writes():
    assert isinstance(caches["default"], DatabaseCache)
    with CaptureQueriesContext(connection) as queries:
        cache.set("k", {"a": 1}, 60)
        cache.set("k", {"a": 2}, 60)
    writes = [q["sql"] for q in queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(writes) == 2 and all(sql.startswith("INSERT") for sql in writes)
    assert cache.get("k") == {"a": 2}


def test_add_takes_an_absent_or_expired_key_and_only_those():
    assert cache.add("lock", 1, 60) is True
    assert cache.add("lock", 2, 60) is False
    assert cache.get("lock") == 1
    cache.set("short", "old", 0)  # expired at once (Django's meaning of a zero timeout)
    assert cache.add("short", "new", 60) is True
    assert cache.get("short") == "new"
    cache.delete("lock")
    assert cache.add("lock", 3, None) is True and cache.get("lock") == 3


def test_the_table_is_culled_every_so_many_writes(monkeypatch):
    monkeypatch.setattr(cache_table, "CULL_EVERY", 5)
    small = DatabaseCache("memhub_cache", {"OPTIONS": {"MAX_ENTRIES": 10, "CULL_FREQUENCY": 2}})
    for n in range(30):
        small.set(f"key-{n:02}", n, 60)
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM memhub_cache")
        (count,) = cursor.fetchone()
    assert count <= 10 + 5  # culled at the last count, at most CULL_EVERY written since
    assert small.get("key-29") == 29


def test_a_key_longer_than_the_column_is_refused():
    cache.set("k" * 250, 1, 60)  # with Django's prefix ":1:", 253 characters
    assert cache.get("k" * 250) == 1
    with pytest.raises(ValueError, match="longer than 255"):
        cache.set("k" * 256, 1, 60)
