"""What team sync remembers between runs: each team store's base, conflicts, blocked files."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from memapp.stores.models import Store


class StoreSyncState(models.Model):
    """A team store's last synced version of each key, and its change counter."""

    store = models.OneToOneField(Store, on_delete=models.CASCADE, related_name="sync_state")
    base = models.JSONField(default=dict, blank=True, help_text="key → sha256:… as last synced")
    folder = models.CharField(
        max_length=600, blank=True, help_text="Its folder in the shared repository as last synced."
    )
    move_error = models.TextField(
        blank=True, help_text="Why its folder could not follow a new name; it waits meanwhile."
    )
    version = models.PositiveBigIntegerField(default=0)
    last_modified = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"sync state of {self.store}"


class TeamSyncStatus(models.Model):
    """The one row (pk=1) the UI and the worker share: what is pending, what went wrong."""

    dirty_at = models.DateTimeField(null=True, blank=True, help_text="Last unpushed change.")
    requested_at = models.DateTimeField(null=True, blank=True, help_text="'Sync now' pressed.")
    last_pull_at = models.DateTimeField(null=True, blank=True)
    last_push_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    suppressed_reason = models.TextField(blank=True)
    suppressed_status = models.CharField(max_length=32, blank=True)
    suppressed_at = models.DateTimeField(null=True, blank=True)
    queued_task_id = models.CharField(
        max_length=64, blank=True, help_text="The sync task waiting or running, if any."
    )
    queued_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return "team sync status"

    @classmethod
    def get(cls) -> TeamSyncStatus:
        return cls.objects.get_or_create(pk=1)[0]


class TeamConflict(models.Model):
    """Overlapping edits (or an edit against a deletion) kept for a person to resolve."""

    class Kind(models.TextChoices):
        EDIT = "edit", "both sides edited"
        EDIT_DELETE = "edit_delete", "edited on one side, deleted on the other"
        RESURRECT = "resurrect", "re-uploaded after it was deleted"

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="conflicts")
    key = models.CharField(max_length=1024)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # None means "the file does not exist on that side", which an empty string cannot say.
    base = models.TextField(null=True, blank=True)  # noqa: DJ001
    ours = models.TextField(null=True, blank=True)  # noqa: DJ001
    theirs = models.TextField(null=True, blank=True)  # noqa: DJ001
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution = models.CharField(max_length=16, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"conflict in {self.key}"


class BlockedFile(models.Model):
    """A file of a team store that was not pushed: a secret, too large, not text, or over the
    cap (the caps are flags: `team_max_entry_bytes`, `team_max_entries`)."""

    class Reason(models.TextChoices):
        SECRET = "secret", "contains a secret"
        TOO_LARGE = "too_large", "over the size cap"
        INVALID = "invalid", "not UTF-8 text"
        CAPPED = "capped", "over the entry cap"

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="blocked_files")
    key = models.CharField(max_length=1024)
    reason = models.CharField(max_length=16, choices=Reason.choices)
    hits = models.JSONField(default=list, blank=True, help_text="rule id, label, line; no value")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["store", "key"], name="one_block_per_file"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.reason})"


class Tombstone(models.Model):
    """A key deleted in memhub, so a stale client's re-upload is held, not resurrected."""

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="tombstones")
    key = models.CharField(max_length=1024)
    checksum = models.CharField(max_length=80)
    deleted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["store", "key"], name="one_tombstone_per_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key} deleted"


class HeldDeletion(models.Model):
    """Deletions a sync would have made, more than a few files or over a quarter of a store:
    files gone from the shared repository (deleted from the store) or gone from the store
    (deleted from the repository). Nothing is deleted until a person confirms them on the Team
    sync page; refusing puts the files back where they went missing (docs/design.md §17)."""

    class Decision(models.TextChoices):
        DELETED = "deleted", "deleted"
        KEPT = "kept", "kept"

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="held_deletions")
    keys = models.JSONField(default=list, help_text="The files the sync would have deleted.")
    outgoing = models.BooleanField(
        default=False, help_text="Gone from the store (else from the shared repository)."
    )
    total = models.PositiveIntegerField(default=0, help_text="Memory files the store had.")
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision = models.CharField(max_length=16, choices=Decision.choices, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{len(self.keys)} deletions held in {self.store}"
