"""Project checkouts holding agent memory snapshots, and the decisions people made on them."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.utils import timezone

from memapp.memdir.paths import agent_memory_dir, memory_base
from memapp.stores.models import Project, Store


def upload_root(user_id: int) -> Path:
    """Where memhub keeps what `memhub-agent snapshot push` uploads for one user."""
    return Path(settings.MEMHUB_DATA_DIR) / "snapshots" / f"user-{user_id}"


class Checkout(models.Model):
    """A checkout of a project: a path on this host, or a copy uploaded by an agent's machine.

    An uploaded checkout has the layout of a real one (`.claude/agent-memory-snapshots/…`,
    `.claude/agent-memory/…`, `.claude/agent-memory-local/…`) inside memhub's data dir.
    """

    class Origin(models.TextChoices):
        HOST = "host", "a path on this host"
        UPLOAD = "upload", "uploaded by memhub-agent"

    path = models.CharField(max_length=4096, unique=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="checkouts")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memhub_checkouts"
    )
    origin = models.CharField(max_length=16, choices=Origin.choices)
    created_at = models.DateTimeField(default=timezone.now)
    scanned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project__key", "origin", "path"]

    def __str__(self) -> str:
        return f"{self.project} at {self.path}"

    @property
    def repo(self) -> Path:
        return Path(self.path)

    def memory_dir(self, agent_type: str, scope: str) -> Path:
        """The agent's memory dir of `scope` as seen from this checkout (docs/design.md §13).

        User scope is the host's memory base for a host checkout, and the uploader's own
        (uploaded) user-scope dir for an uploaded one.
        """
        if scope == Store.AgentScope.USER:
            if self.origin == self.Origin.UPLOAD:
                env = {"CLAUDE_CODE_REMOTE_MEMORY_DIR": str(upload_root(self.owner_id) / "home")}
                return agent_memory_dir(agent_type, "user", env=env)
            return agent_memory_dir(agent_type, "user", env=None)
        return agent_memory_dir(agent_type, scope, repo=self.repo)

    def user_memory_base(self) -> Path:
        if self.origin == self.Origin.UPLOAD:
            return upload_root(self.owner_id) / "home"
        return memory_base()


class SnapshotDecision(models.Model):
    """What a person decided about one snapshot version for one agent memory dir."""

    class Decision(models.TextChoices):
        INITIALIZE = "initialize", "initialize from the snapshot"
        MERGE = "merge", "merge the ticked files"
        KEEP = "keep", "keep local memory"
        REPLACE = "replace", "replace with the snapshot"
        DISMISS = "dismiss", "dismissed for now"

    checkout = models.ForeignKey(Checkout, on_delete=models.CASCADE, related_name="decisions")
    agent_type = models.CharField(max_length=255)
    scope = models.CharField(max_length=16, choices=Store.AgentScope.choices)
    updated_at = models.CharField(max_length=64, help_text="The snapshot's updatedAt.")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    files = models.JSONField(
        default=dict, blank=True, help_text="file name → sha256 of each approved snapshot file"
    )
    result = models.JSONField(default=dict, blank=True, help_text="written, removed, refused")
    store = models.ForeignKey(
        Store, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(
        null=True, blank=True, help_text="When the agent's memory was changed to match."
    )

    class Meta:
        ordering = ["-decided_at", "-id"]
        indexes = [
            models.Index(fields=["checkout", "agent_type", "scope"], name="decision_target"),
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.agent_type} ({self.scope}) from {self.updated_at}"

    @property
    def waiting(self) -> bool:
        """Decided, but the agent's machine has not carried it out yet."""
        return self.applied_at is None and self.decision != self.Decision.DISMISS
