"""The shared cache in a database table (`MEMHUB_CACHE_URL=db://`, the default), with each
write one statement.

Django's own table cache counts the table's rows before every write (to cull it) and then
reads, updates or inserts the key in a transaction: five statements, twice per API request for
the throttle and again for a session's recall budget. Here a `set` or an `add` is one upsert
(SQLite and PostgreSQL both have `INSERT … ON CONFLICT`), and the table is counted and culled
once every `CULL_EVERY` writes of a process. An `add` still succeeds only when the key is
absent or expired, atomically, which is what the locks of `memapp.stores.shared_state` need.
"""

from __future__ import annotations

import base64
import pickle
from contextlib import nullcontext
from datetime import UTC, datetime

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import DatabaseError, connections, router, transaction
from django.utils.timezone import now as tz_now

__all__ = ["CULL_EVERY", "DatabaseCache"]

CULL_EVERY = 200  # writes of one process between two counts of the table
MAX_KEY_LENGTH = 255  # the table's cache_key column


class DatabaseCache(DjangoDatabaseCache):
    """Django's database cache, with `set` and `add` each a single upsert."""

    def __init__(self, table, params):
        super().__init__(table, params)
        self._writes = 0

    def validate_key(self, key):
        """Only what the table needs (Django's check, for memcached, walks every character)."""
        if len(key) > MAX_KEY_LENGTH:
            raise ValueError(f"cache key longer than {MAX_KEY_LENGTH} characters: {key[:80]}…")

    def _base_set(self, mode, key, value, timeout=DEFAULT_TIMEOUT):
        if mode == "touch":
            return super()._base_set(mode, key, value, timeout)
        timeout = self.get_backend_timeout(timeout)
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        quote = connection.ops.quote_name
        table, cache_key = quote(self._table), quote("cache_key")
        value_column, expires = quote("value"), quote("expires")
        now = tz_now().replace(microsecond=0)
        if timeout is None:
            exp = datetime.max
        else:
            exp = datetime.fromtimestamp(timeout, tz=UTC)
        exp = connection.ops.adapt_datetimefield_value(exp.replace(microsecond=0))
        encoded = base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
        sql = (
            f"INSERT INTO {table} ({cache_key}, {value_column}, {expires}) VALUES (%s, %s, %s) "
            f"ON CONFLICT ({cache_key}) DO UPDATE SET {value_column} = excluded.{value_column}, "
            f"{expires} = excluded.{expires}"
        )
        params = [key, encoded, exp]
        if mode == "add":  # only over an expired entry
            sql += f" WHERE {table}.{expires} < %s"
            params.append(connection.ops.adapt_datetimefield_value(now))
        self._writes += 1
        try:
            # In a transaction a failed write must not break it: a savepoint. Outside one, the
            # statement is its own transaction.
            guard = transaction.atomic(using=db) if connection.in_atomic_block else nullcontext()
            with guard, connection.cursor() as cursor:
                if self._writes % CULL_EVERY == 0:
                    cursor.execute(f"SELECT COUNT(*) FROM {table}")
                    count = cursor.fetchone()[0]
                    if count > self._max_entries:
                        self._cull(db, cursor, now, count)
                cursor.execute(sql, params)
                return cursor.rowcount > 0
        except DatabaseError:
            return False  # as Django's: a cache write may fail without failing the request
