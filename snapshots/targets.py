"""Which agent memory dirs each checkout's snapshots apply to, and their status (read side).

A *target* is one agent memory dir (user, project or local scope) and the snapshot of the same
agent in one checkout. Snapshots apply to the agent's user-scope memory, as in Claude Code, and
to its project and local scopes when those directories exist; each has its own status and
marker. Status is computed from disk on every request (a few small reads per target): the
database only remembers checkouts and decisions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from django.http import Http404

from memapp.memdir.agent_snapshots import (
    SNAPSHOTS_FOLDER,
    SnapshotReview,
    SnapshotStatus,
    compare_snapshot,
    snapshot_status,
)
from memapp.stores.models import Store
from snapshots.models import Checkout, SnapshotDecision

SCOPES = (Store.AgentScope.USER, Store.AgentScope.PROJECT, Store.AgentScope.LOCAL)


@dataclass
class Target:
    checkout: Checkout
    agent_type: str  # the snapshot's directory name
    scope: str
    snapshot_dir: Path
    memory_dir: Path
    status: SnapshotStatus
    store: Store | None = None
    decision: SnapshotDecision | None = None  # the latest one for this snapshot version

    @property
    def pending(self) -> bool:
        """A person has something to decide: an update nobody decided on yet."""
        return self.status.pending and self.decision is None

    @property
    def waiting(self) -> bool:
        """Decided, and the agent's machine has yet to carry it out."""
        return self.decision is not None and self.decision.waiting

    @property
    def key(self) -> tuple[int, str, str]:
        return (self.checkout.pk, self.agent_type, self.scope)

    @cached_property
    def review(self) -> SnapshotReview:
        return compare_snapshot(self.snapshot_dir, self.memory_dir)


def snapshot_agents(repo: Path) -> list[str]:
    """The agent types with a snapshot dir in a checkout (real, non-hidden directories)."""
    root = repo / ".claude" / SNAPSHOTS_FOLDER
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    return sorted(
        e.name for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
    )


def _scopes(checkout: Checkout, agent_type: str) -> list[tuple[str, Path]]:
    found = []
    for scope in SCOPES:
        try:
            path = checkout.memory_dir(agent_type, scope)
        except ValueError:
            return []
        if scope == Store.AgentScope.USER or path.is_dir():
            found.append((scope, path))
    return found


def _targets(checkout: Checkout, agents: list[str] | None = None) -> list[Target]:
    targets = []
    for agent_type in snapshot_agents(checkout.repo) if agents is None else agents:
        snapshot = checkout.repo / ".claude" / SNAPSHOTS_FOLDER / agent_type
        for scope, memory_dir in _scopes(checkout, agent_type):
            status = snapshot_status(snapshot, memory_dir)
            targets.append(Target(checkout, agent_type, scope, snapshot, memory_dir, status))
    return targets


def _attach(targets: list[Target]) -> list[Target]:
    """Each target's store and latest decision for its snapshot version, in two queries."""
    if not targets:
        return targets
    stores = {
        s.path: s for s in Store.objects.filter(path__in=[str(t.memory_dir) for t in targets])
    }
    latest: dict[tuple, SnapshotDecision] = {}
    decisions = SnapshotDecision.objects.filter(
        checkout__in={t.checkout.pk for t in targets}
    ).select_related("decided_by")
    for decision in decisions.order_by("decided_at", "id"):
        key = (decision.checkout_id, decision.agent_type, decision.scope, decision.updated_at)
        latest[key] = decision
    for target in targets:
        target.store = stores.get(str(target.memory_dir))
        if target.status.updated_at:
            target.decision = latest.get((*target.key, target.status.updated_at))
    return targets


def targets_for_user(user) -> list[Target]:
    """Every target of the user's checkouts."""
    checkouts = Checkout.objects.filter(owner=user).select_related("project")
    return _attach([t for checkout in checkouts for t in _targets(checkout)])


def targets_for_checkout(checkout: Checkout, agent_type: str) -> list[Target]:
    return _attach(_targets(checkout, [agent_type]))


def get_checkout_for_user(user, checkout_id: int) -> Checkout:
    try:
        return Checkout.objects.select_related("project").get(pk=checkout_id, owner=user)
    except Checkout.DoesNotExist:
        raise Http404("No such checkout.") from None


def get_target_for_user(user, checkout_id: int, agent_type: str, scope: str) -> Target:
    """One target, only for the owner of its checkout and agent store; anyone else gets a 404."""
    checkout = get_checkout_for_user(user, checkout_id)
    if agent_type not in snapshot_agents(checkout.repo):
        raise Http404("No such snapshot.")
    for target in targets_for_checkout(checkout, agent_type):
        if target.scope == scope:
            if target.store is not None and target.store.owner_id != user.pk:
                raise Http404("No such snapshot.")
            return target
    raise Http404("No such agent memory.")
