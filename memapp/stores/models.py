"""The database is a mirror of what is on disk (docs/design.md §1), plus flags and events."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from memapp.memdir.memory_dirs import CODEX_MEMORIES
from memapp.memdir.store_files import CHECKSUM_PREFIX
from memapp.stores.warm import StampedQuerySet


class Project(models.Model):
    """A project: keyed by its repo slug `owner/repo`, else its sanitized memory dir name.

    Shown as a person knows it (docs/design.md §22): its repo slug, else the `name`
    discovery found for it (the checkout's slug or path), else its key.
    """

    key = models.CharField(max_length=255, unique=True)
    name = models.CharField(max_length=255, blank=True)
    repo_slug = models.CharField(
        max_length=255,
        blank=True,
        db_index=True,
        help_text="owner/repo, once known (docs/design.md §3)",
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="memhub_projects"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = StampedQuerySet.as_manager()

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.repo_slug or self.name or self.key


class ProjectAlias(models.Model):
    """Another name of a project (docs/design.md §1): a Claude Code directory name, or a key or
    slug it had before. It resolves to the project, never to a second one."""

    name = models.CharField(max_length=255, unique=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="aliases")
    created_at = models.DateTimeField(default=timezone.now)

    objects = StampedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "project aliases"

    def __str__(self) -> str:
        return f"{self.name} → {self.project}"


class StoreQuerySet(StampedQuerySet):
    def visible_to(self, user) -> StoreQuerySet:
        """Private and agent stores only to their owner (staff included); team stores to members."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(
            Q(owner=user) | Q(kind=Store.Kind.TEAM, project__members=user)
        ).distinct()


class Store(models.Model):
    """One memory directory on disk: a user's private store, a team store or an agent's memory."""

    class Kind(models.TextChoices):
        PRIVATE = "private"
        TEAM = "team"
        AGENT = "agent"

    class Origin(models.TextChoices):
        DISCOVERED = "discovered", "discovered on this host"
        MANAGED = "managed", "kept in memhub's data dir"

    class AgentScope(models.TextChoices):
        USER = "user"
        PROJECT = "project"
        LOCAL = "local"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    path = models.CharField(max_length=4096, unique=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="stores"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memhub_stores",
        help_text="Private and agent stores are visible only to this user.",
    )
    mount = models.CharField(max_length=255, blank=True, help_text="team/<mount>/ of newer clients")
    agent_type = models.CharField(max_length=255, blank=True)
    agent_scope = models.CharField(max_length=16, choices=AgentScope.choices, blank=True)
    exclude = models.JSONField(
        default=list, blank=True, help_text="Top-level entries that are stores of their own."
    )
    file_count = models.PositiveIntegerField(default=0)
    scanned_at = models.DateTimeField(null=True, blank=True)
    index_stats = models.JSONField(
        default=dict, blank=True, help_text="MEMORY.md caps and problems as of the last scan."
    )

    objects = StoreQuerySet.as_manager()

    class Meta:
        ordering = ["project__key", "kind", "mount", "agent_type"]

    def __str__(self) -> str:
        return f"{self.label} ({self.path})"

    @property
    def read_only(self) -> bool:
        """Files another program generates (Codex CLI's memories): shown, never written."""
        return self.kind == self.Kind.AGENT and self.agent_type == CODEX_MEMORIES

    @property
    def label(self) -> str:
        if self.kind == self.Kind.TEAM:
            return f"team/{self.mount}" if self.mount else "team"
        if self.read_only:
            return "Codex CLI's memories (read-only)"
        if self.kind == self.Kind.AGENT:
            return f"agent {self.agent_type} ({self.agent_scope} scope)"
        return "private"


DAY_MS = 86_400_000


class MemoryFileQuerySet(models.QuerySet):
    def visible_to(self, user) -> MemoryFileQuerySet:
        return self.filter(store__in=Store.objects.visible_to(user))

    def matching(self, filters: dict, now_ms: int, stale_days: int) -> MemoryFileQuerySet:
        """Apply the review UI's filters (cleaned FilterForm data); empty values mean "any"."""
        qs = self
        if query := filters.get("q"):
            qs = qs.filter(
                Q(name__icontains=query)
                | Q(description__icontains=query)
                | Q(body__icontains=query)
                | Q(path__icontains=query)
            )
        if memory_type := filters.get("type"):
            qs = qs.filter(type="" if memory_type == "untyped" else memory_type)
        if scope := filters.get("scope"):
            qs = qs.filter(store__kind=scope)
        age = filters.get("age")
        if age == "stale":
            qs = qs.filter(mtime_ms__lt=now_ms - stale_days * DAY_MS)
        elif age:
            qs = qs.filter(mtime_ms__gt=now_ms - (int(age) + 1) * DAY_MS)
        problem = filters.get("problem")
        if problem == "broken":
            qs = qs.exclude(problem="")
        elif problem == "why_how":
            qs = qs.filter(type__in=["feedback", "project"]).exclude(missing_sections=[])
        elif problem == "unindexed":
            qs = qs.filter(in_index=False)
        elif problem == "dangling":
            qs = qs.exclude(dangling_links=[])
        elif problem == "relative_dates":
            qs = qs.exclude(relative_dates=[])
        elif problem == "never_recalled":
            recalled = RecallStat.objects.filter(store=OuterRef("store"), path=OuterRef("path"))
            qs = qs.exclude(Exists(recalled))
        order = {"name": ["name", "path"], "type": ["type", "-mtime_ms"]}
        return qs.order_by(*order.get(filters.get("sort") or "", ["-mtime_ms", "path"]))


class MemoryFile(models.Model):
    """The mirror of one topic file: its header fields and what the review UI filters on."""

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024, help_text="Relative to the store, '/'-separated.")
    name = models.CharField(max_length=1000, blank=True)
    description = models.TextField(blank=True)
    type = models.CharField(max_length=16, blank=True, help_text="Empty when untyped.")
    type_form = models.CharField(max_length=16, blank=True)
    size = models.BigIntegerField()
    mtime_ms = models.BigIntegerField()
    # The file's ctime when mirrored: a rewrite that kept the mtime and size changes it.
    ctime_ns = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    links = models.JSONField(default=list, blank=True)
    dangling_links = models.JSONField(default=list, blank=True)
    problem = models.TextField(blank=True, help_text="Why the frontmatter is empty or broken.")
    body = models.TextField(blank=True, help_text="For search; capped for huge files.")
    missing_sections = models.JSONField(default=list, blank=True)
    relative_dates = models.JSONField(default=list, blank=True)
    in_index = models.BooleanField(default=False)

    objects = MemoryFileQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["store", "path"], name="one_mirror_row_per_file"),
        ]
        indexes = [models.Index(fields=["store", "-mtime_ms"], name="memoryfile_newest")]
        ordering = ["-mtime_ms", "path"]

    def __str__(self) -> str:
        return self.path

    @property
    def checksum(self) -> str:
        """The file's content as every API names it: `sha256:<hex>` (docs/design.md §6a)."""
        return CHECKSUM_PREFIX + self.sha256

    @property
    def title(self) -> str:
        return self.name or self.path.rsplit("/", 1)[-1].removesuffix(".md")


class ApiTokenQuerySet(StampedQuerySet):
    quiet_fields = frozenset({"last_used_at", "last_user_agent"})

    def active(self) -> ApiTokenQuerySet:
        """Not revoked and not expired: the tokens the API accepts."""
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
        )


class ApiToken(models.Model):
    """A per-user API token. Only its SHA-256 is stored; the token is shown once at creation.

    Its scope bounds what it may do whatever its user may do (docs/design.md §26)."""

    class Scope(models.TextChoices):
        READ = "read", "read"
        WRITE = "write", "write (own memory)"
        TEAM_WRITE = "team_write", "team write"
        ADMIN = "admin", "admin"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=16, help_text="The first characters, to tell tokens apart."
    )
    token_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.TEAM_WRITE)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="None: never expires.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_user_agent = models.CharField(max_length=200, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class Invitation(models.Model):
    """An invitation to join memhub and some projects: a link that works once, until it expires
    or is revoked (docs/design.md §26). Only the SHA-256 of its secret is stored."""

    email = models.EmailField(blank=True, help_text="Empty: an invitation by link only.")
    projects = models.ManyToManyField(Project, blank=True, related_name="invitations")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.email or f"invitation {self.pk}"

    @property
    def pending(self) -> bool:
        return (
            self.accepted_at is None
            and self.revoked_at is None
            and self.expires_at > timezone.now()
        )


class DeviceAuthorization(models.Model):
    """One run of the device authorization flow (RFC 8628) of `memhub-agent login`: the device
    polls with `device_code`, the person types or follows `user_code` (docs/design.md §26)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DENIED = "denied"
        ISSUED = "issued"

    device_code_hash = models.CharField(max_length=64, unique=True)
    user_code = models.CharField(max_length=9, unique=True)
    device_name = models.CharField(max_length=100)
    client = models.CharField(max_length=200, blank=True, help_text="The device's User-Agent.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    interval = models.PositiveSmallIntegerField(default=5, help_text="Seconds between polls.")
    last_polled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user_code} ({self.device_name})"

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()


class FlagValue(models.Model):
    """A stored flag value: global when `project` is empty, else that project's override."""

    name = models.CharField(max_length=64)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="flag_values"
    )
    value = models.JSONField()
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = StampedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=Q(project__isnull=True), name="one_global_flag_value"
            ),
            models.UniqueConstraint(fields=["name", "project"], name="one_flag_value_per_project"),
        ]

    def __str__(self) -> str:
        scope = self.project.key if self.project_id else "global"
        return f"{self.name} [{scope}] = {self.value!r}"


# Events that are never about one person's store: shown to everyone signed in when site-wide,
# else to the project's members. Every other kind is about a store or a person, so it is shown
# by the store's visibility (a team store's events to its members only, staff included), or
# only to the person who caused it once the store is gone (a deleted private store must not
# turn its events public). Store-less recall counts are also shown to staff, members or not:
# they hold no path, no author and no content.
OPEN_EVENT_KINDS = (
    "flag_changed",
    "sync_pull",
    "sync_push",
    "push_suppressed",
    "stores_discovered",
)


def event_visibility(user) -> Q:
    """What `user` may see of events, by their current access to the event's store or project
    (docs/design.md §12): staff who are not members see none of a project's team events.

    Over the columns Event and EventTotal share (kind, project, store, user), so the totals the
    dashboard sums are narrowed exactly as the events are. The person's stores and projects are
    read first, as lists of ids: a subquery in one branch of the `OR` kept PostgreSQL from the
    indexes of every branch (it scanned all of a million events' totals: the dashboard 340 ms,
    against 104 ms with the ids; docs/scaling.md). No joins, so each row appears once.
    """
    stores = list(Store.objects.visible_to(user).values_list("pk", flat=True))
    projects = list(Project.objects.filter(members=user).values_list("pk", flat=True))
    open_kinds = Q(store__isnull=True, kind__in=OPEN_EVENT_KINDS)
    seen = Q(store__in=stores) | open_kinds & (Q(project__isnull=True) | Q(project__in=projects))
    if user.is_staff:
        seen |= Q(store__isnull=True, kind="recall")
    return seen | Q(store__isnull=True, user=user)


class EventQuerySet(models.QuerySet):
    def visible_to(self, user) -> EventQuerySet:
        """The rows `user` may see (`event_visibility`); none when signed out."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(event_visibility(user))


class Event(models.Model):
    """Something that happened (docs/design.md §12); fields are whitelisted per kind in
    `stores.events`."""

    kind = models.CharField(max_length=32, db_index=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    store = models.ForeignKey(
        Store, null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    fields = models.JSONField(default=dict, blank=True)

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        # A store's (or the store-less) events newest first without sorting them all: the parts
        # of the team sync page (`memapp.web.keyset`).
        indexes = [models.Index(fields=["store", "created_at", "id"], name="event_store_newest")]

    def __str__(self) -> str:
        return f"{self.kind} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class EventTotal(models.Model):
    """How many events of one kind, project, store and person a day had (docs/design.md §12.2),
    kept as events are written so the dashboard sums these rather than reading every event.

    `facet` and `value` split a kind by what the dashboard tells apart (a push that failed, a
    recall's selector and how many memories it selected); `amount` adds up the kind's number
    (files blocked, entries dropped, memories selected). `key` names the row for the upsert that
    adds to it; the foreign keys follow their targets as the events' do (cleared when one goes,
    moved by a merge of projects), so what a person sees of both stays alike.
    """

    key = models.CharField(max_length=255, unique=True)
    day = models.DateField(db_index=True)
    kind = models.CharField(max_length=32)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="event_totals"
    )
    store = models.ForeignKey(
        Store,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="event_totals",
        db_index=False,  # (store, day) below
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # (user, day) below
    )
    facet = models.CharField(max_length=64, blank=True)
    value = models.IntegerField(default=0)
    count = models.BigIntegerField(default=0)
    amount = models.BigIntegerField(default=0)

    objects = EventQuerySet.as_manager()

    class Meta:
        # Each branch of `event_visibility` (a person's stores, the store-less kinds, their own
        # events) reads only the window's days of its rows.
        indexes = [
            models.Index(fields=["store", "day"], name="eventtotal_store_day"),
            models.Index(fields=["user", "day"], name="eventtotal_user_day"),
        ]

    def __str__(self) -> str:
        return f"{self.count} {self.kind} on {self.day}"


class Blob(models.Model):
    """The bytes of a memory file at some moment, kept once per distinct SHA-256: a store's
    twenty thousand first versions cost one row each, and a restored version costs nothing."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    data = models.BinaryField()
    size = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.size} bytes)"


class Via(models.TextChoices):
    """How a version came about (docs/design.md §23)."""

    UI = "ui", "the web UI"
    API = "api", "the API"
    AGENT_SYNC = "agent_sync", "memhub-agent sync"
    PROTOCOL = "protocol", "the team memory protocol"
    TEAM_SYNC = "team_sync", "team sync"
    PROPOSAL = "proposal", "an approved proposal"
    SNAPSHOT = "snapshot", "a snapshot decision"
    IMPORT = "import", "a zip import"
    DISK = "disk", "found on disk"


class MemoryVersion(models.Model):
    """One version of one topic file: its bytes (a Blob) or, with an empty checksum, its
    deletion; who made it and through what."""

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="versions")
    path = models.CharField(max_length=1024)
    sha256 = models.CharField(
        max_length=64, blank=True, db_index=True, help_text="Empty: the file was deleted."
    )
    size = models.BigIntegerField(default=0)
    via = models.CharField(max_length=16, choices=Via.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.CharField(max_length=300, blank=True)
    index_line = models.TextField(blank=True, help_text="Its MEMORY.md line at the time, if any.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["store", "path", "id"], name="memoryversion_timeline")]
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.path} at {self.created_at:%Y-%m-%d %H:%M:%S}"

    @property
    def deleted(self) -> bool:
        return not self.sha256


class TrashItem(models.Model):
    """A forgotten (or deleted) memory, restorable until MEMHUB_TRASH_DAYS have passed."""

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="trash")
    path = models.CharField(max_length=1024)
    sha256 = models.CharField(max_length=64, help_text="Its content, a Blob.")
    size = models.BigIntegerField(default=0)
    name = models.CharField(max_length=1000, blank=True)
    description = models.TextField(blank=True)
    index_line = models.TextField(blank=True, help_text="Its MEMORY.md line when forgotten.")
    version = models.ForeignKey(
        MemoryVersion,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The deletion's version: pruning drops the history up to it.",
    )
    via = models.CharField(max_length=16, choices=Via.choices)
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    deleted_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-deleted_at", "-id"]

    def __str__(self) -> str:
        return f"{self.path} (trash)"

    @property
    def title(self) -> str:
        return self.name or self.path.rsplit("/", 1)[-1].removesuffix(".md")


class RecallStat(models.Model):
    """How often recall returned a memory, and when last (a row of its own: mirror rows are
    replaced whenever their file changes)."""

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="recall_stats")
    path = models.CharField(max_length=1024)
    count = models.PositiveIntegerField(default=0)
    last_recalled_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["store", "path"], name="one_recall_stat_per_file"),
        ]

    def __str__(self) -> str:
        return f"{self.path} recalled {self.count}×"
