"""What an agent's request resolves to (its token's user, the project's stores, the flags, the
team store, each store's recall index), remembered per process while the shared stamp stays
the same (docs/design.md §21).

The stamp is one value in the shared cache. Every change that could alter such an answer (a
store or its mirror, a flag, a membership, a token, a user, a project or one of its names)
replaces it once its transaction commits (`bump`, called by the signals of
`connect_signals`). An API request reads the stamp once, when its token is checked
(`begin_request`), and `remembered` answers from what this process kept under that same
stamp, or asks the database and keeps the answer under it. A change therefore takes effect
on the very next request in every worker and on every machine that shares the cache, for one
cache read per request instead of the half dozen queries it saves (the same read brings the
token's throttle state: `read_ahead`).

Outside an API request (pages, tasks, tests calling functions directly) nothing is kept and
every answer comes from the database.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.core.cache import cache
from django.db import models, transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from memapp.stores.shared_state import Seen, read_many

__all__ = [
    "StampedQuerySet",
    "begin_request",
    "bump",
    "connect_signals",
    "read_ahead",
    "remembered",
    "request_scope",
    "warm_requests",
]

T = TypeVar("T")

STAMP_KEY = "memhub:warm-stamp"
MAX_ENTRIES = 10_000  # past this many answers the process starts again from none

_stamp: ContextVar[str | None] = ContextVar("memhub_warm_stamp", default=None)
_ahead: ContextVar[dict[str, Seen] | None] = ContextVar("memhub_warm_ahead", default=None)
_entries: dict[Hashable, tuple[str, Any]] = {}
_lock = threading.Lock()


def begin_request(ahead: Iterable[str] = ()) -> None:
    """Read the shared stamp for the rest of this request (once, before any answer is used),
    and in the same round trip the shared state of `ahead` (see `read_ahead`). The stamp is
    made when the cache has none (first use, or evicted), in which case nothing kept under an
    earlier one matches it."""
    seen = read_many([STAMP_KEY, *ahead])
    stamp = seen.pop(STAMP_KEY).value
    if stamp is None:
        cache.add(STAMP_KEY, uuid.uuid4().hex, None)
        stamp = cache.get(STAMP_KEY)
    _stamp.set(stamp)
    _ahead.set(seen)


def read_ahead(key: str) -> Seen | None:
    """What `begin_request` read of `key` for this request, given once (after a first change
    of it, this request's view of it is out of date), or None."""
    ahead = _ahead.get()
    return ahead.pop(key, None) if ahead else None


@contextmanager
def request_scope() -> Iterator[None]:
    """One request: what `begin_request` read is forgotten when the request ends, so that
    whatever runs next in this thread starts without a stamp."""
    token, ahead = _stamp.set(None), _ahead.set(None)
    try:
        yield
    finally:
        _stamp.reset(token)
        _ahead.reset(ahead)


def warm_requests(get_response):
    """Middleware: each request in its own `request_scope`."""

    def middleware(request):
        with request_scope():
            return get_response(request)

    return middleware


def remembered(key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()`, or what it returned under this request's stamp in this process. Without a
    stamp (outside an API request) it is simply computed. What `compute` raises is not kept."""
    stamp = _stamp.get()
    if stamp is None:
        return compute()
    with _lock:
        found = _entries.get(key)
    if found is not None and found[0] == stamp:
        return found[1]
    value = compute()
    with _lock:
        if len(_entries) >= MAX_ENTRIES:
            _entries.clear()
        _entries[key] = (stamp, value)
    return value


def _replace_stamp() -> None:
    cache.set(STAMP_KEY, uuid.uuid4().hex, None)


def bump() -> None:
    """Something an answer depends on changed: this process forgets what it kept now, the rest
    of this request keeps nothing (it sees its own writes, which may yet be rolled back), and
    the shared stamp is replaced when the transaction commits (not before: a worker that read
    the new stamp could otherwise keep what the database said before the commit). Once per
    transaction, however many rows it changes."""
    _stamp.set(None)
    with _lock:
        _entries.clear()
    connection = transaction.get_connection()
    if connection.in_atomic_block and any(
        func is _replace_stamp for _sids, func, _robust in connection.run_on_commit
    ):
        return
    transaction.on_commit(_replace_stamp)


# -- what bumps --------------------------------------------------------------------------------


class StampedQuerySet(models.QuerySet):
    """A queryset whose bulk `update` bumps too (a save, a delete and a change of members bump
    through signals, a bulk update sends none). `quiet_fields` change no answer."""

    quiet_fields: frozenset[str] = frozenset()

    def update(self, **kwargs):
        rows = super().update(**kwargs)
        if rows and not set(kwargs) <= self.quiet_fields:
            bump()
        return rows


def _saved(sender, instance, update_fields=None, **kwargs) -> None:
    # A store's rescan that found nothing new only records when it looked (mirror._touch): no
    # answer depends on that, and every idle store does it every minute. (A kept store asks
    # the database for its scan time before it counts as due: memapp.stores.recall.)
    touched = update_fields is not None and set(update_fields) == {"scanned_at"}
    if touched and getattr(instance, "scanned_at", None) is not None:
        return
    bump()


def _changed(sender, **kwargs) -> None:
    bump()


def _members_changed(sender, action: str, **kwargs) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        bump()


def connect_signals(models_answered_from: Iterable[type[models.Model]], members=None) -> None:
    """Bump on every save and delete of these models and every change of `members` (the
    through model of a project's members); called once by each app's `ready` that keeps
    answers in such models."""
    for model in models_answered_from:
        post_save.connect(_saved, sender=model, dispatch_uid=f"warm-save-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"warm-delete-{model.__name__}")
    if members is not None:
        m2m_changed.connect(_members_changed, sender=members, dispatch_uid="warm-members")
