"""The shared cache's table (memapp.stores.cache_table): a write is one statement, and `add`
keeps the meaning the shared-state locks rely on (only over an absent or expired key); a
swap (compare-and-set) writes only over the value it read."""

from __future__ import annotations

import pytest
from django.core.cache import cache, caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memapp.stores import cache_table, shared_state
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


def test_swap_writes_only_over_the_value_it_read():
    backend = caches["default"]
    assert backend.read("n") == (None, cache_table.MISSING)
    assert backend.swap("n", None, 1, 60) is True  # absent, as read
    assert backend.swap("n", None, 9, 60) is False  # no longer absent
    raw, value = backend.read("n")
    assert value == 1
    assert backend.swap("n", raw, 2, 60) is True
    assert backend.swap("n", raw, 3, 60) is False  # another writer came first
    assert cache.get("n") == 2


def test_an_expired_value_reads_as_absent_and_is_swapped_as_absent():
    backend = caches["default"]
    cache.set("gone", "old", 0)
    assert cache.get("gone") is None and cache.get_many(["gone"]) == {}
    assert backend.read("gone")[0] is None
    assert backend.swap("gone", None, "new", 60) is True
    assert cache.get("gone") == "new"


def test_an_update_started_from_a_stale_read_keeps_the_other_workers_change():
    """`update(seen=…)` starts from what the request read earlier; when another worker wrote
    since, that write must count, not be overwritten from the stale value."""
    seen = shared_state.read("count", 0)
    shared_state.update("count", lambda n: (n + 1, None), 60, default=0)  # another worker
    assert shared_state.update("count", lambda n: (n + 10, n), 60, 0, seen=seen) == 1
    assert cache.get("count") == 11
    fresh = shared_state.read("count", 0)
    assert shared_state.update("count", lambda n: (n + 1, n), 60, 0, seen=fresh) == 11
    assert cache.get("count") == 12
