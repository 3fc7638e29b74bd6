"""Gemini CLI's `/memory inbox` patches as memhub proposals (docs/design.md §28).

A background task, enqueued by the clock beside the consolidation sweep, reads each Gemini
CLI store's `.inbox/private/*.patch` (`memapp.memdir.gemini_inbox`) and makes each new patch,
by its content hash, one proposal of kind `inbox` for the store's owner: a change per file,
carrying the whole file as the patch leaves it. A patch memhub cannot take (malformed, not
applying to the file as it is, a target outside the store, binary, huge, not UTF-8) becomes a
failed proposal holding the reason, so a person sees it once; the patch file is left where
Gemini put it. Approving writes through the normal write path (`memapp.lifecycle.proposals`)
and then removes the patch file, as Gemini's own apply does.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from django.db import transaction
from django.utils import timezone
from django_tasks import task

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.memdir.extraction import ProposedChange, change_checks
from memapp.memdir.gemini_inbox import (
    PatchError,
    clear_inbox_patch,
    inbox_patch_files,
    parse_patch,
    patched_files,
    read_patch,
)
from memapp.memdir.store_files import FileRejected, checksum
from memapp.stores.actions import store_file_path
from memapp.stores.events import record_event
from memapp.stores.models import Store

__all__ = ["clear_applied_inbox", "gemini_inbox_task", "propose_inbox_patches"]

log = logging.getLogger(__name__)

AGENT = "gemini-cli"


def _read(store: Store, key: str) -> bytes | None:
    try:
        return store_file_path(store, key).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except FileRejected as exc:
        raise PatchError(f"{key}: {exc}") from None


def _changes(store: Store, text: str, source: str) -> list[ProposalChange]:
    files = patched_files(
        parse_patch(text), Path(store.path), lambda k: _read(store, k), store.exclude
    )
    changes = []
    for position, (key, (before, after)) in enumerate(sorted(files.items())):
        action = ProposalChange.Action.CREATE if before is None else ProposalChange.Action.UPDATE
        reason = f"Gemini CLI proposed it in its /memory inbox ({source})."
        proposed = ProposedChange(action, "private", key, key, "", None, after, reason)
        changes.append(
            ProposalChange(
                position=position,
                action=action,
                key=key,
                name=key,
                body=after,
                reason=reason,
                base_checksum="" if before is None else checksum(before),
                checks=[check.as_dict() for check in change_checks(proposed)],
            )
        )
    return changes


def _known(store: Store) -> set[str]:
    sources = Proposal.objects.filter(store=store, kind=Proposal.Kind.INBOX).values_list(
        "sources", flat=True
    )
    return {s.get("sha256") for each in sources for s in each}


@transaction.atomic
def _propose(store: Store, patch: Path, sha: str, changes, problem: str) -> Proposal:
    source = patch.relative_to(store.path).as_posix()
    proposal = Proposal.objects.create(
        kind=Proposal.Kind.INBOX,
        store=store,
        owner=store.owner,
        sources=[{"agent": AGENT, "inbox": source, "sha256": sha}],
        dropped=[{"file": source, "reason": problem}] if problem else [],
        status=Proposal.Status.FAILED if problem else Proposal.Status.PENDING,
        decided_at=timezone.now() if problem else None,
    )
    for change in changes:
        change.proposal = proposal
    ProposalChange.objects.bulk_create(changes)
    return proposal


def propose_inbox_patches(store: Store) -> Counter:
    """Propose each patch of `store`'s Gemini CLI inbox not proposed before; counts by outcome
    (`proposed`, `refused`, `known`, `unreadable`)."""
    counts: Counter = Counter()
    if store.agent_type != AGENT or store.owner_id is None:
        return counts
    known = _known(store)
    for patch in inbox_patch_files(Path(store.path)):
        source = patch.relative_to(store.path).as_posix()
        try:
            sha, text = read_patch(patch)
            if sha in known:
                counts["known"] += 1
                continue
            changes, problem = _changes(store, text, source), ""
        except PatchError as exc:
            sha, changes, problem = exc.sha256 or sha, [], str(exc)
            if sha in known:
                counts["known"] += 1
                continue
        except OSError as exc:
            log.warning("Gemini CLI inbox patch %s not read: %s", patch, exc)
            counts["unreadable"] += 1
            continue
        _propose(store, patch, sha, changes, problem)
        known.add(sha)
        counts["refused" if problem else "proposed"] += 1
        record_event(
            "gemini_inbox_patch",
            store=store,
            source=source,
            outcome="refused" if problem else "proposed",
            reason=problem,
            files=len(changes),
        )
    return counts


def clear_applied_inbox(proposal: Proposal) -> None:
    """After an inbox proposal was applied: remove Gemini CLI's patch file, if it still holds
    what was proposed, so Gemini does not offer it again."""
    for source in proposal.sources:
        if source.get("inbox"):
            clear_inbox_patch(Path(proposal.store.path) / source["inbox"], source["sha256"])


@task()
def gemini_inbox_task() -> dict:
    """Look at every Gemini CLI store's inbox (a directory listing each, when it is empty)."""
    counts: Counter = Counter()
    for store in Store.objects.filter(agent_type=AGENT).exclude(owner=None):
        counts += propose_inbox_patches(store)
    return dict(counts)
