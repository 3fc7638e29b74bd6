"""The shared cache in a database table (`MEMHUB_CACHE_URL=db://`, the default), with each
read and each write one plain statement.

Django's own table cache counts the table's rows before every write (to cull it) and then
reads, updates or inserts the key in a transaction: five statements, twice per API request for
the throttle and again for a session's recall budget. Here a `set` or an `add` is one upsert
(SQLite and PostgreSQL both have `INSERT … ON CONFLICT`), and the table is counted and culled
once every `CULL_EVERY` writes of a process. An `add` still succeeds only when the key is
absent or expired, atomically. A read is one SELECT that leaves expired rows out (Django's
builds its datetime conversion anew on every call, a third of a read's cost, and deletes what
expired, which the cull does here). `read` and `swap` are a compare-and-set, so that
`memapp.stores.shared_state` changes a value shared by every worker in two statements, where a
lock around it takes five.
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

MISSING = object()

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

    def get_many(self, keys, version=None):
        """The unexpired values of `keys`, in one SELECT."""
        found = self.read_many(keys, version)
        return {key: value for key, (_raw, value) in found.items()}

    def read(self, key, version=None) -> tuple[str | None, object]:
        """The stored text of `key` (None when absent or expired) and its value (`MISSING`):
        what `swap` compares against."""
        return self.read_many([key], version).get(key, (None, MISSING))

    def read_many(self, keys, version=None) -> dict[str, tuple[str, object]]:
        """Like `read`, for each of `keys` found (and unexpired), in one SELECT."""
        if not keys:
            return {}
        key_map = {self.make_and_validate_key(key, version=version): key for key in keys}
        connection = connections[router.db_for_read(self.cache_model_class)]
        quote = connection.ops.quote_name
        now = connection.ops.adapt_datetimefield_value(tz_now())
        sql = (
            f"SELECT {quote('cache_key')}, {quote('value')} FROM {quote(self._table)} "
            f"WHERE {quote('cache_key')} IN ({', '.join(['%s'] * len(key_map))}) "
            f"AND {quote('expires')} >= %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*key_map, now])
            rows = cursor.fetchall()
        return {key_map[key]: (raw, self._decode(raw)) for key, raw in rows}

    @staticmethod
    def _decode(raw: str):
        return pickle.loads(base64.b64decode(raw.encode()))

    def swap(self, key, expected: str | None, value, timeout=DEFAULT_TIMEOUT) -> bool:
        """Store `value` only if the key still holds `expected` as `read` returned it (None:
        still absent or expired); False when another writer came first. One statement."""
        if expected is None:
            return self.add(key, value, timeout)
        key = self.make_and_validate_key(key)
        return self._write(key, value, timeout, expected)

    def _base_set(self, mode, key, value, timeout=DEFAULT_TIMEOUT):
        if mode == "touch":
            return super()._base_set(mode, key, value, timeout)
        return self._write(key, value, timeout, None, add=mode == "add")

    def _write(self, key, value, timeout, expected: str | None, add: bool = False) -> bool:
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
        if expected is not None:  # a compare-and-set
            sql = (
                f"UPDATE {table} SET {value_column} = %s, {expires} = %s "
                f"WHERE {cache_key} = %s AND {value_column} = %s"
            )
            params = [encoded, exp, key, expected]
        else:
            sql = (
                f"INSERT INTO {table} ({cache_key}, {value_column}, {expires}) "
                f"VALUES (%s, %s, %s) ON CONFLICT ({cache_key}) DO UPDATE SET "
                f"{value_column} = excluded.{value_column}, {expires} = excluded.{expires}"
            )
            params = [key, encoded, exp]
        if add:  # only over an expired entry (to the microsecond, as `read` sees it)
            sql += f" WHERE {table}.{expires} < %s"
            params.append(connection.ops.adapt_datetimefield_value(tz_now()))
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
