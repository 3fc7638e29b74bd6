"""The live mirror: file-system events under the memory base become rescans and discoveries.

An agent writes its memory files itself, so memhub learns of them from the file system. The
watcher (`watchfiles`, inotify on Linux) hands over sets of changed paths, already coalesced
over a short window; :meth:`LiveMirror.plan` maps each set to the few things worth doing:
rescan the stores that own a changed path, or discover again when a path lies where a new store
could appear (`projects/<p>/memory/…`, `agent-memory/<agent>/…`) but no known store owns it.
So a burst of 1,000 writes into one store is one rescan, and the transcripts Claude Code writes
next to its memory (`projects/<p>/<session>.jsonl`) cost a string test each.

The watcher can fail in ways memhub cannot prevent (the base does not exist yet, a directory it
may not read, a symlink loop, an event queue that overflowed): each kind of failure is logged
once and never stops the process; the fallback rescan (`MEMHUB_RESCAN_SECONDS`) catches up on
whatever the watcher missed, and is the only source of changes where no notifications exist.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import close_old_connections, connections

from memapp.memdir.store_files import TEAM_DIR, FileKind, classify
from memapp.stores.changes import announce_disk_change
from memapp.stores.discovery import discover_local_stores
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Store

__all__ = ["LiveMirror", "Plan"]

log = logging.getLogger(__name__)

# After this many changed paths in one set the watcher has most likely lost events (the
# kernel's queue holds 16,384 by default): discover and rescan everything instead.
FLOOD = 20_000
WAIT_FOR_BASE_S = 2.0  # how often a missing memory base is looked for again
RETRY_WATCH_S = 5.0  # after the watcher failed, before it is started again
RECHECK_S = 1.0  # after a new directory or a failure, when to catch up again
WAKE_MS = 500  # the watcher hands back control at least this often, changes or not


@dataclass
class Plan:
    """What a set of changes calls for."""

    discover: bool = False
    stores: set[int] = field(default_factory=set)

    def __bool__(self) -> bool:
        return self.discover or bool(self.stores)


class LiveMirror:
    """Keeps the mirror of the stores under `base` (the memory base) in step with the disk."""

    def __init__(self, base: Path, rescan_every: float = 60.0) -> None:
        self.base = Path(base)
        self.rescan_every = rescan_every
        self._caught_up_at = time.monotonic()
        self._recheck_at: float | None = None
        self._prefix = str(self.base.absolute()) + "/"
        self._roots: list[tuple[str, int, frozenset[str]]] = []
        self._logged: set[str] = set()
        self.refresh()

    # -- what to do ---------------------------------------------------------------------------

    def refresh(self) -> None:
        """Load the discovered stores and their roots (longest first, so a team store inside a
        private store's directory owns its own files)."""
        rows = Store.objects.filter(origin=Store.Origin.DISCOVERED).values_list(
            "pk", "path", "exclude"
        )
        roots = [(str(Path(path).absolute()) + "/", pk, frozenset(ex)) for pk, path, ex in rows]
        self._roots = sorted(roots, key=lambda root: -len(root[0]))

    def plan(self, changes: Iterable[tuple[object, str]]) -> Plan:
        """What the changed paths call for (see the module docstring)."""
        plan = Plan()
        for count, (_change, path) in enumerate(changes, 1):
            if count > FLOOD:
                self._log_once("flood", "over %d changes at once: rescanning everything", FLOOD)
                return Plan(discover=True)
            if not path.startswith(self._prefix):
                plan.discover = True  # the base itself came or went
                continue
            self._plan_path(plan, path)
        return plan

    def _plan_path(self, plan: Plan, path: str) -> None:
        probe = path + "/"
        for root, pk, exclude in self._roots:
            if probe == root:
                plan.discover = True  # a store's directory itself came or went
                return
            if path.startswith(root):
                inside = path[len(root) :]
                top = inside.split("/", 1)[0]
                if top in exclude or classify(inside, exclude) is FileKind.DAILY_LOG:
                    # Its own store (a team store not known yet) or no store at all (logs/).
                    plan.discover = plan.discover or top == TEAM_DIR
                    return
                plan.stores.add(pk)
                if "/" in inside and inside.endswith("/MEMORY.md"):
                    plan.discover = True  # an index below a store's root: maybe a new mount
                return
        if _where_a_store_could_be(path[len(self._prefix) :]):
            plan.discover = True

    def apply(self, plan: Plan) -> None:
        """Discover again (which rescans every store it finds), or rescan the planned stores."""
        close_old_connections()
        if plan.discover:
            self.catch_up()
            return
        for store in Store.objects.filter(pk__in=plan.stores):
            with store_lock(store):
                found = rescan_store(store)
            if found.added or found.changed or found.removed:
                announce_disk_change(store)

    def catch_up(self) -> None:
        """The fallback: discover every store under the base and rescan it."""
        close_old_connections()
        self._caught_up_at = time.monotonic()
        self._recheck_at = None
        discover_local_stores(self.base)
        self.refresh()

    def _catch_up_when_due(self) -> None:
        now = time.monotonic()
        recheck = self._recheck_at is not None and now >= self._recheck_at
        if recheck or now - self._caught_up_at >= self.rescan_every:
            self._safely(self.catch_up)

    def _recheck_soon(self, after: float = RECHECK_S) -> None:
        """Catch up again shortly: files written into a new directory before the watcher
        watched it sent no event, and changes whose handling failed must not be lost."""
        self._recheck_at = time.monotonic() + after

    def _safely(self, work, *args) -> None:
        try:
            work(*args)
        except Exception as exc:  # a vanished directory, a locked database … never fatal
            self._log_once(f"apply:{type(exc).__name__}", "updating the mirror failed: %s", exc)
            self._recheck_soon()

    # -- the watcher --------------------------------------------------------------------------

    def watch(self, stop: threading.Event) -> None:
        """Discover, then apply every change under the base until `stop` is set; never raises.

        Each catch-up runs once the watcher is watching (at its first hand-back), so that a
        change made while it runs is an event to apply, not a change missed in between."""
        self._recheck_soon(0)
        try:
            self._watch(stop)
        finally:
            connections.close_all()  # this thread's connections

    def _watch(self, stop: threading.Event) -> None:
        from watchfiles import watch  # its Rust extension loads only in the watching process

        while not stop.is_set():
            if not self.base.is_dir():
                self._log_once("no-base", "memory base %s does not exist (yet)", self.base)
                self._catch_up_when_due()  # stores whose directories went with the base go
                stop.wait(WAIT_FOR_BASE_S)
                continue
            if "no-base" in self._logged:
                self._logged.discard("no-base")
                self._recheck_soon(0)  # it appeared: whatever is in it now is new
            try:
                for changes in watch(
                    self.base,
                    watch_filter=self._relevant,
                    debounce=1_000,
                    step=50,
                    stop_event=stop,
                    rust_timeout=WAKE_MS,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    ignore_permission_denied=True,
                ):
                    if changes:
                        plan = self.plan(changes)
                        if plan.discover or _any_new_directory(changes):
                            self._recheck_soon()
                        self._safely(self.apply, plan)
                    self._catch_up_when_due()
                    if not self.base.is_dir():
                        break  # the base was removed: wait for it again
            except Exception as exc:  # an unreadable directory, a loop, a lost inotify watch …
                self._log_once(
                    f"watch:{type(exc).__name__}", "watching %s failed: %s", self.base, exc
                )
                self._recheck_soon()
                stop.wait(RETRY_WATCH_S)
                self._catch_up_when_due()

    def _relevant(self, _change: object, path: str) -> bool:
        """The watcher's filter: Markdown files and directories under the places stores live
        (not the transcripts and caches beside them)."""
        if not path.startswith(self._prefix):
            return True  # the base itself
        rel = path[len(self._prefix) :]
        parts = rel.split("/")
        if parts[0] == "projects":
            return len(parts) < 3 or parts[2] == "memory"
        return parts[0] == "agent-memory"

    def _log_once(self, kind: str, message: str, *args: object) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            log.warning(message, *args)


def _where_a_store_could_be(rel: str) -> bool:
    """`projects/<p>/memory[/…]` or `agent-memory/<agent>[/…]`, relative to the base."""
    parts = rel.split("/")
    if parts[0] == "projects":
        return len(parts) >= 3 and parts[2] == "memory"
    return parts[0] == "agent-memory" and len(parts) >= 2


def _any_new_directory(changes: Iterable[tuple[object, str]]) -> bool:
    return any(change == 1 and Path(path).is_dir() for change, path in changes)  # 1: added
