"""State every worker must agree on (a token's request count, a session's recall budget), kept
in Django's cache and changed one writer at a time.

The cache is shared (`MEMHUB_CACHE_URL`: a database table by default, or Redis), but a
read-modify-write from two server workers at once would lose one of the writes. In the
table, an update is a compare-and-set: read the value, write the new one only if the stored
one is still what was read, and start again otherwise (two statements, on every request of the
API). In other caches each update holds a lock taken with `cache.add`, which is atomic in every
backend memhub supports (Redis `SET NX`, a locked dict in-process): five round trips.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.cache import cache, caches

from memapp.stores.cache_table import MISSING, DatabaseCache

__all__ = ["Seen", "locked", "read", "read_many", "update"]

log = logging.getLogger(__name__)
T = TypeVar("T")

LOCK_HOLD_S = 5  # a holder that died lets go after this long
LOCK_WAIT_S = 2.0  # then the update goes ahead unlocked rather than fail the request
_POLL_S = 0.002


@contextlib.contextmanager
def locked(key: str) -> Iterator[None]:
    """Hold the cache lock of `key` for the duration of the block."""
    lock_key = f"{key}:lock"
    start = time.monotonic()
    deadline = start + LOCK_WAIT_S
    held = cache.add(lock_key, 1, LOCK_HOLD_S)
    while not held and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        held = cache.add(lock_key, 1, LOCK_HOLD_S)
    if not held:
        log.warning("shared state %s: lock not taken within %.1f s, going ahead", key, LOCK_WAIT_S)
    try:
        yield
    finally:
        # Held for milliseconds: well inside LOCK_HOLD_S, so the lock is still ours to drop.
        if held and time.monotonic() - start < LOCK_HOLD_S:
            cache.delete(lock_key)


@dataclass(frozen=True)
class Seen:
    """A value as `read` found it, which `update` may start from instead of reading it again."""

    value: Any
    raw: str | None = None  # the table's text of it (None: absent), for its compare-and-set


def read(key: str, default=None) -> Seen:
    """The value of `key` (or `default`) as it is now."""
    return read_many([key], default)[key]


def read_many(keys: list[str], default=None) -> dict[str, Seen]:
    """The value of each of `keys` (or `default`) as it is now, in one round trip."""
    backend = caches["default"]
    if isinstance(backend, DatabaseCache):
        found = backend.read_many(keys)
        return {
            key: Seen(found[key][1], found[key][0]) if key in found else Seen(default)
            for key in keys
        }
    values = cache.get_many(keys)
    return {key: Seen(values.get(key, default)) for key in keys}


def update(
    key: str,
    change: Callable[[Any], tuple[Any, T]],
    timeout: float,
    default=None,
    seen: Seen | None = None,
) -> T:
    """Apply `change` to the value of `key` (or `default`); `change` returns (the new value,
    what to return), and may be called again when another worker changed the value meanwhile.
    The new value lives `timeout` seconds. `seen`: what this request read of `key` already
    (first tried as the value to change; another worker's change since is still found)."""
    backend = caches["default"]
    if isinstance(backend, DatabaseCache):
        return _swapped(backend, key, change, timeout, default, seen)
    with locked(key):
        value, result = change(cache.get(key, default))
        cache.set(key, value, timeout)
    return result


def _swapped(backend: DatabaseCache, key: str, change, timeout: float, default, seen):
    deadline = time.monotonic() + LOCK_WAIT_S
    for attempt in itertools.count():
        if attempt > 1:  # another worker won twice in a row, or the table refuses writes
            time.sleep(_POLL_S)
        if attempt == 0 and seen is not None:
            raw, value = seen.raw, seen.value
        else:
            raw, found = backend.read(key)
            value = default if found is MISSING else found
        new, result = change(value)
        if backend.swap(key, raw, new, timeout):
            break
        if time.monotonic() > deadline:  # as the lock does: the request is not failed
            log.warning("shared state %s: not written within %.1f s", key, LOCK_WAIT_S)
            break
    return result
