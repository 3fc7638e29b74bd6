"""Sessions and their transcripts, extraction runs, and proposals waiting for a person
(docs/design.md §14)."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from memapp.stores.models import Project, Store

AGENTS = [("claude-code", "Claude Code"), ("gemini-cli", "Gemini CLI"), ("codex", "Codex")]


class SessionQuerySet(models.QuerySet):
    def visible_to(self, user) -> SessionQuerySet:
        """A session is its owner's alone, while they may still see the store it feeds
        (docs/design.md §1): decided on every request, never remembered."""
        if not user.is_authenticated:
            return self.none()
        stores = Store.objects.visible_to(user).values("pk")
        return self.filter(models.Q(store__isnull=True) | models.Q(store__in=stores), owner=user)


class Session(models.Model):
    """One agent session of one person, as its transcript reached memhub.

    `extracted_through` is the extraction cursor: the last entry (by `seq`) a finished run has
    read. It moves only once that run's proposal is stored, or when a gate skipped the entries.
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memhub_sessions"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    store = models.ForeignKey(
        Store,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="sessions",
        help_text="Where extraction proposes: the owner's private store.",
    )
    session_id = models.CharField(max_length=200)
    title = models.CharField(max_length=300, blank=True)
    cwd = models.CharField(max_length=4096, blank=True)
    memory_dir = models.CharField(
        max_length=4096, blank=True, help_text="The agent's own memory dir, as it names it."
    )
    interactive = models.BooleanField(null=True, blank=True)
    agent = models.CharField(
        max_length=20,
        choices=AGENTS,
        default="claude-code",
        help_text="The coding agent whose session this is (docs/design.md §28).",
    )
    entry_count = models.PositiveIntegerField(default=0)
    turn_count = models.PositiveIntegerField(default=0)
    extracted_through = models.PositiveIntegerField(default=0)
    turns_pending = models.PositiveIntegerField(
        default=0, help_text="Turns after the extraction cursor."
    )
    skipped = models.JSONField(
        default=dict, blank=True, help_text="Lines not kept, counted by reason."
    )
    redactions = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(
        default=0, help_text="The main conversation's size, estimated (characters / 4)."
    )
    tool_calls = models.PositiveIntegerField(default=0)
    auto_dream = models.BooleanField(
        null=True,
        blank=True,
        help_text="The person's autoDreamEnabled, as the client said it.",
    )
    at_rest = models.BooleanField(
        default=False, help_text="The last assistant turn made no tool call (a natural break)."
    )
    started_at = models.DateTimeField(default=timezone.now)
    last_entry_at = models.DateTimeField(default=timezone.now, db_index=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "session_id"], name="one_session_per_id"),
        ]
        ordering = ["-last_entry_at", "-id"]

    def __str__(self) -> str:
        return self.title or self.session_id

    @property
    def pending_entries(self) -> int:
        return self.entry_count - self.extracted_through


class TranscriptEntry(models.Model):
    """One kept transcript entry, redacted: what a person and the agent wrote, each tool call
    as one line, tool output cut. `text` is what past-context search indexes."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="entries")
    seq = models.PositiveIntegerField()
    key = models.CharField(max_length=100, help_text="The entry's uuid (or a stand-in).")
    type = models.CharField(max_length=16)
    parent = models.CharField(max_length=100, blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)
    prose = models.TextField(blank=True)
    tools = models.JSONField(default=list, blank=True, help_text="[name, argument, file path]")
    errors = models.JSONField(
        default=list, blank=True, help_text="Failed tool results, one line each."
    )
    text = models.TextField(blank=True)
    is_user_prose = models.BooleanField(default=False)
    is_sidechain = models.BooleanField(default=False)
    gate_checked = models.BooleanField(
        default=False, help_text="detect-secrets has redacted it too; only then is it read."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "key"], name="one_entry_per_key"),
            models.UniqueConstraint(fields=["session", "seq"], name="one_entry_per_seq"),
        ]
        ordering = ["session", "seq"]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq}"


class RunQuerySet(models.QuerySet):
    def expire_lost(self, store_id: int, after: datetime.timedelta) -> int:
        """Fail the store's runs a stopped worker left queued or running for longer than
        `after`, so its queue moves again; how many."""
        cutoff = timezone.now() - after
        return self.filter(
            models.Q(status=Run.Status.RUNNING, started_at__lt=cutoff)
            | models.Q(status=Run.Status.QUEUED, created_at__lt=cutoff),
            store_id=store_id,
        ).update(
            status=Run.Status.FAILED,
            outcome=self.model.Outcome.FAILED,
            error="lost: the task worker stopped before it finished",
            finished_at=timezone.now(),
        )

    def claim(self, run_id: int) -> bool:
        """Mark a queued run running; False when it is not queued (already run, or expired).
        One query, so two workers never both claim it."""
        return bool(
            self.filter(pk=run_id, status=Run.Status.QUEUED).update(
                status=Run.Status.RUNNING, started_at=timezone.now()
            )
        )


class Run(models.Model):
    """What every background run of a store keeps: where it stands, what it proposed, its
    attempts and errors, its task and its times.

    A run is created queued, claimed by one worker (`claim`), then finished (`finish`, with
    its outcome) or failed (`fail`). Both save only the fields a run writes while it works
    (`RUN_FIELDS`), never `task_id` or a cancel asked for meanwhile."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    selector = models.CharField(max_length=16, blank=True, help_text="llm or offline")
    proposed = models.PositiveIntegerField(default=0)
    dropped = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    # Every subclass has an `outcome` field and an `Outcome` with `FAILED`.
    RUN_FIELDS: tuple[str, ...] = (
        "status",
        "outcome",
        "selector",
        "proposed",
        "dropped",
        "attempts",
        "error",
        "finished_at",
    )

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    def finish(self, outcome: str) -> None:
        """The run is done, with `outcome`; saves what it wrote."""
        self.status, self.outcome = self.Status.DONE, outcome
        self.finished_at = timezone.now()
        self.save(update_fields=self.RUN_FIELDS)

    def fail(self, error: str) -> None:
        """The run failed with `error` (kept to 2,000 characters); saves what it wrote."""
        self.status, self.outcome = self.Status.FAILED, self.Outcome.FAILED
        self.error, self.finished_at = error[:2000], timezone.now()
        self.save(update_fields=self.RUN_FIELDS)


class SessionSummary(models.Model):
    """A session's rolling summary (docs/design.md §14.10): Markdown with the fixed sections,
    written by a model or by memhub's rules, and the cursor it was written up to."""

    session = models.OneToOneField(
        Session, on_delete=models.CASCADE, primary_key=True, related_name="summary"
    )
    text = models.TextField(blank=True)
    state = models.JSONField(
        default=dict, blank=True, help_text="What the rules keep between updates."
    )
    selector = models.CharField(max_length=16, blank=True, help_text="llm or offline")
    through = models.PositiveIntegerField(default=0, help_text="The last entry (seq) read.")
    tokens_at = models.PositiveIntegerField(default=0, help_text="Session tokens when written.")
    tool_calls_at = models.PositiveIntegerField(default=0)
    updates = models.PositiveIntegerField(default=0)
    queued = models.BooleanField(default=False, help_text="An update waits for the worker.")
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"summary of {self.session}"

    @property
    def built(self) -> bool:
        return self.updates > 0


class ExtractionRun(Run):
    """One extraction of one store: queued, running, then done or failed."""

    class Outcome(models.TextChoices):
        PROPOSED = "proposed", "proposed changes"
        LOGGED = "logged", "appended to the daily log"
        NOTHING = "nothing", "nothing worth keeping"
        SKIPPED = "skipped", "skipped by a gate"
        FAILED = "failed"

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="extraction_runs")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    trailing = models.BooleanField(
        default=False, help_text="Asked for while another run was busy: skips the turn count."
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    windows = models.JSONField(
        default=list, blank=True, help_text="Per session: entries read and the gate's verdict."
    )
    messages = models.PositiveIntegerField(default=0)
    dropped_changes = models.JSONField(
        default=list, blank=True, help_text="Changes that broke a rule, with the reason."
    )

    RUN_FIELDS = (*Run.RUN_FIELDS, "windows", "messages", "dropped_changes")

    class Meta(Run.Meta):
        indexes = [models.Index(fields=["store", "status"], name="run_store_status")]

    def __str__(self) -> str:
        return f"extraction of {self.store} ({self.status})"


class ProposalQuerySet(models.QuerySet):
    def visible_to(self, user) -> ProposalQuerySet:
        """Proposals are shown to the person whose sessions they came from, and nobody else,
        and only while that person may see the store they change: a member taken out of a
        project no longer reaches the proposals they started on its team store."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(owner=user, store__in=Store.objects.visible_to(user).values("pk"))


class Proposal(models.Model):
    """Changes to one store proposed by a background job, waiting for a person (or applied by
    the `lifecycle_apply` flag). Extraction, consolidation and distillation all make these."""

    class Kind(models.TextChoices):
        EXTRACTION = "extraction"
        CONSOLIDATION = "consolidation"
        DISTILLATION = "distillation"
        INBOX = "inbox", "agent's inbox"

    class Status(models.TextChoices):
        PENDING = "pending"
        APPLIED = "applied"
        REJECTED = "rejected"
        FAILED = "failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="proposals")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memhub_proposals"
    )
    sessions = models.ManyToManyField(Session, blank=True, related_name="proposals")
    sources = models.JSONField(
        default=list,
        blank=True,
        help_text="Per session: the entries (seq) the proposal came from.",
    )
    dropped = models.JSONField(
        default=list, blank=True, help_text="Changes the model proposed that broke a rule."
    )
    run = models.ForeignKey(
        ExtractionRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision = models.JSONField(default=dict, blank=True)

    objects = ProposalQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} proposal for {self.store} ({self.status})"

    @property
    def agents(self) -> list[str]:
        """The coding agents it came from, by name: its sessions', or the agent whose own
        proposal it carries (`sources[].agent`, a Gemini CLI inbox patch: docs/design.md §28)."""
        names = {session.get_agent_display() for session in self.sessions.all()}
        labels = dict(AGENTS)
        names |= {labels.get(s["agent"], s["agent"]) for s in self.sources if s.get("agent")}
        return sorted(names)


class ProposalChange(models.Model):
    """One proposed create, update or delete of a topic file, with the checksum the file had
    when it was proposed (empty: it did not exist)."""

    class Action(models.TextChoices):
        CREATE = "create"
        UPDATE = "update"
        DELETE = "delete"

    class Status(models.TextChoices):
        PENDING = "pending"
        APPLIED = "applied"
        CONFLICT = "conflict", "changed since it was proposed"
        REFUSED = "refused"
        SKIPPED = "skipped", "not selected"
        REJECTED = "rejected"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="changes")
    position = models.PositiveIntegerField(default=0)
    action = models.CharField(max_length=8, choices=Action.choices)
    key = models.CharField(max_length=1024)
    name = models.CharField(max_length=200, blank=True)
    description = models.CharField(max_length=500, blank=True)
    type = models.CharField(max_length=16, blank=True)
    body = models.TextField(blank=True)
    reason = models.TextField(blank=True)
    scope = models.CharField(
        max_length=8,
        blank=True,
        help_text="Where a person sent a new memory (private, team); empty: as proposed.",
    )
    base_checksum = models.CharField(
        max_length=80, blank=True, help_text="sha256:… of the file when proposed; empty: absent."
    )
    checks = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    edited = models.BooleanField(default=False)
    message = models.TextField(blank=True, help_text="Why it was refused, for the reviewer.")
    # None: no conflict; "" would be an empty file on disk.
    current_text = models.TextField(null=True, blank=True)  # noqa: DJ001
    # The index as the job read it, so approving merges what changed in it since (None: a
    # topic file, or an index proposed before memhub kept it).
    base_text = models.TextField(null=True, blank=True)  # noqa: DJ001

    class Meta:
        ordering = ["proposal", "position", "id"]

    def __str__(self) -> str:
        return f"{self.action} {self.key}"


class ConsolidationState(models.Model):
    """Per store, what the cheap gates of consolidation last saw (docs/design.md §14.2), and
    how far distillation has read each daily log."""

    store = models.OneToOneField(
        Store, on_delete=models.CASCADE, primary_key=True, related_name="consolidation"
    )
    last_run_at = models.DateTimeField(
        null=True, blank=True, help_text="When memhub last took the lock to consolidate."
    )
    scanned_at = models.DateTimeField(
        null=True, blank=True, help_text="The last session scan (at most one per 10 minutes)."
    )
    sessions_seen = models.PositiveIntegerField(default=0)
    gate = models.CharField(max_length=32, blank=True, help_text="What the last check decided.")
    checked_at = models.DateTimeField(null=True, blank=True)
    log_cursor = models.JSONField(
        default=dict, blank=True, help_text="Per daily log key: the last line distilled."
    )

    def __str__(self) -> str:
        return f"consolidation of {self.store_id}: {self.gate or 'not checked'}"


class ConsolidationRun(Run):
    """One consolidation task of one store: the distillation of its new daily-log entries
    and/or its consolidation, under its `.consolidate-lock`."""

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "on schedule"
        MANUAL = "manual", "Consolidate now"

    class Outcome(models.TextChoices):
        PROPOSED = "proposed", "proposed changes"
        NOTHING = "nothing", "nothing to change"
        SKIPPED = "skipped", "skipped by a gate"
        CANCELLED = "cancelled"
        FAILED = "failed"

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="consolidation_runs")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who reviews what it proposes.",
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    cancel_requested = models.BooleanField(
        default=False, help_text="Someone cancelled it while it ran: it stops at the next step."
    )
    consolidate = models.BooleanField(default=True, help_text="Run the four phases.")
    distill = models.BooleanField(default=True, help_text="Distill new daily-log entries.")
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    gate = models.CharField(max_length=32, blank=True, help_text="passed, or the gate that said no")
    lock_holder = models.PositiveIntegerField(null=True, blank=True)
    lock_problem = models.CharField(max_length=200, blank=True)
    sessions = models.PositiveIntegerField(default=0)
    log_entries = models.PositiveIntegerField(default=0)
    index_before = models.JSONField(default=dict, blank=True)
    index_after = models.JSONField(default=dict, blank=True)
    stale = models.PositiveIntegerField(null=True, blank=True)
    dropped_changes = models.JSONField(default=list, blank=True)
    findings = models.JSONField(default=dict, blank=True)
    proposals = models.ManyToManyField(Proposal, blank=True, related_name="consolidation_runs")

    RUN_FIELDS = (
        *Run.RUN_FIELDS,
        "owner",
        "gate",
        "lock_holder",
        "lock_problem",
        "sessions",
        "log_entries",
        "index_before",
        "index_after",
        "stale",
        "dropped_changes",
        "findings",
    )

    class Meta(Run.Meta):
        indexes = [models.Index(fields=["store", "status"], name="consolidation_store_status")]

    def __str__(self) -> str:
        return f"consolidation of {self.store} ({self.status})"

    @property
    def gate_words(self) -> str:
        """Why a skipped run was skipped, for a person."""
        return {
            "flag_off": "consolidation is turned off",
            "memory_off": "auto memory is turned off for the project",
            "dream_off": "its owner turned consolidation off (autoDreamEnabled: false)",
            "cancelled": "it was cancelled",
            "locked": f"a local agent was consolidating the directory (PID {self.lock_holder})",
            "no_reviewer": "nobody can review it: the project has no members",
            "no_directory": "the directory is missing",
            "lock_unavailable": f"its lock cannot be written ({self.lock_problem})",
        }.get(self.gate, self.gate)
