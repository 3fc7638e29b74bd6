"""Admin flags (docs/design.md §11): typed values with defaults, global with per-project overrides.

Every flag is declared once in FLAGS. Read through `get_flag(name, project=None)`; change through
`set_flag(...)`, which validates and audits the change as a `flag_changed` event.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memapp.memdir.index import MAX_INDEX_BYTES, MAX_INDEX_LINES
from memapp.memdir.store_files import MAX_ENTRY_BYTES
from memapp.stores.events import record_event
from memapp.stores.models import FlagValue
from memapp.stores.warm import remembered


class FlagError(ValueError):
    """An unknown flag, or a value the flag does not accept."""


@dataclass(frozen=True)
class FlagSpec:
    name: str
    kind: type  # bool, int or str
    default: Any
    help: str
    in_effect: bool = False  # False: stored and shown, but the feature it drives is not built yet
    global_only: bool = False
    minimum: int | None = None
    # Far below what a database integer or a timedelta holds: a value past them broke every
    # page and task that read the flag.
    maximum: int = 1_000_000_000
    choices: tuple[str, ...] = ()

    def clean(self, value: Any) -> Any:
        """Return `value` as this flag's type, or raise FlagError saying what is accepted."""
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in {"1", "true", "yes", "on"}:
                return True
            if isinstance(value, str) and value.strip().lower() in {"0", "false", "no", "off"}:
                return False
            raise FlagError(f"{self.name} must be true or false, not {value!r}")
        if self.kind is int:
            if isinstance(value, bool):
                raise FlagError(f"{self.name} must be an integer, not {value!r}")
            try:
                number = int(str(value).strip()) if isinstance(value, str) else int(value)
            except (TypeError, ValueError):
                raise FlagError(f"{self.name} must be an integer, not {value!r}") from None
            if isinstance(value, float) and value != number:
                raise FlagError(f"{self.name} must be an integer, not {value!r}")
            if self.minimum is not None and number < self.minimum:
                raise FlagError(f"{self.name} must be at least {self.minimum}, not {number}")
            if number > self.maximum:
                raise FlagError(f"{self.name} must be at most {self.maximum:,}, not {number}")
            return number
        if not isinstance(value, str) or not value.strip():
            raise FlagError(f"{self.name} must be a non-empty string")
        value = value.strip()
        if self.choices and value not in self.choices:
            raise FlagError(f"{self.name} must be one of {', '.join(self.choices)}, not {value!r}")
        return value


def _specs() -> list[FlagSpec]:
    # `in_effect=True` only where the code reads the flag today: prompting.py (prompt modes and
    # index caps), recall.py (recall, model, limit, scan and surfacing caps), views/stores.py (the
    # index meter), teamsync (team memory, entry caps, secret gate, sync interval, protocol),
    # memapp.lifecycle (extraction, consolidation and how their proposals are applied).
    return [
        FlagSpec(
            "auto_memory",
            bool,
            True,
            "Auto memory on: prompts include a memory section. Off turns off recall, "
            "extraction, consolidation and team memory writes for the project too.",
            in_effect=True,
        ),
        FlagSpec(
            "team_memory",
            bool,
            True,
            "Team memory on: team stores, team sync, protocol.",
            in_effect=True,
        ),
        FlagSpec(
            "recall",
            bool,
            True,
            "Recall on: agents may ask which memories fit a query.",
            in_effect=True,
        ),
        FlagSpec(
            "recall_model",
            str,
            settings.MEMHUB_RECALL_MODEL,
            "Model of the LLM selector.",
            in_effect=True,
        ),
        FlagSpec(
            "recall_max",
            int,
            5,
            "At most this many memories per recall.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "recall_offline_only", bool, False, "Never call the LLM selector.", in_effect=True
        ),
        FlagSpec(
            "skip_index", bool, False, "Prompts leave out the MEMORY.md step.", in_effect=True
        ),
        FlagSpec(
            "daily_log_mode",
            bool,
            False,
            "Append-only daily logs instead of team memory, distilled by consolidation.",
            in_effect=True,
        ),
        FlagSpec(
            "search_past_context",
            bool,
            False,
            "Prompts add 'Searching past context'.",
            in_effect=True,
        ),
        FlagSpec(
            "extraction",
            bool,
            True,
            "Background extraction of memories from sessions.",
            in_effect=True,
        ),
        FlagSpec(
            "extraction_every_n_turns",
            int,
            1,
            "Extract every N turns of a session.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "extraction_non_interactive",
            bool,
            False,
            "Extract from non-interactive sessions (SDK, -p) too.",
            in_effect=True,
        ),
        FlagSpec(
            "session_summary",
            bool,
            True,
            "A rolling summary of each uploaded session (session page, search, resume).",
            in_effect=True,
        ),
        FlagSpec(
            "lifecycle_apply",
            str,
            "review",
            "Proposed memory changes wait for a person (review) or are applied at once (auto).",
            in_effect=True,
            choices=("review", "auto"),
        ),
        FlagSpec(
            "consolidation",
            bool,
            True,
            "Consolidation and distillation of memory, proposed for review.",
            in_effect=True,
        ),
        FlagSpec(
            "consolidation_min_hours",
            int,
            24,
            "Hours between consolidations of a store.",
            in_effect=True,
            minimum=1,
            maximum=10 * 365 * 24,
        ),
        FlagSpec(
            "consolidation_min_sessions",
            int,
            5,
            "Sessions since the last consolidation before the next.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "index_max_lines",
            int,
            MAX_INDEX_LINES,
            "MEMORY.md line cap.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "index_max_bytes",
            int,
            MAX_INDEX_BYTES,
            "MEMORY.md byte cap.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "scan_max_files",
            int,
            200,
            "Files a scan keeps (newest first).",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec("frontmatter_max_lines", int, 30, "Lines read for a header.", minimum=3),
        FlagSpec(
            "surface_max_bytes", int, 4_096, "Bytes surfaced per memory.", in_effect=True, minimum=1
        ),
        FlagSpec(
            "surface_session_bytes",
            int,
            60 * 1024,
            "Bytes per session.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "team_max_entries",
            int,
            500,
            "Entries per project team store.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "team_max_entry_bytes",
            int,
            MAX_ENTRY_BYTES,
            "Bytes per team entry.",
            in_effect=True,
            minimum=1,
        ),
        FlagSpec(
            "secrets_entropy_plugins",
            bool,
            False,
            "Also run detect-secrets' entropy and IP plugins before a push.",
            in_effect=True,
            global_only=True,
        ),
        FlagSpec(
            "sync_interval_seconds",
            int,
            60,
            "Seconds between team pulls.",
            in_effect=True,
            minimum=5,
            maximum=7 * 24 * 3600,
        ),
        FlagSpec(
            "protocol_project_creation",
            str,
            "staff",
            "Who may create projects through the team memory protocol.",
            in_effect=True,
            choices=("staff", "everyone"),
        ),
    ]


FLAGS: dict[str, FlagSpec] = {spec.name: spec for spec in _specs()}


def flag_spec(name: str) -> FlagSpec:
    try:
        return FLAGS[name]
    except KeyError:
        raise FlagError(f"unknown flag {name!r}") from None


def get_flag(name: str, project=None) -> Any:
    """The project's override if it has one, else the global value, else the default."""
    spec = flag_spec(name)
    scope = Q(project__isnull=True)
    if project is not None and not spec.global_only:
        scope |= Q(project=project)
    values = dict(FlagValue.objects.filter(scope, name=name).values_list("project_id", "value"))
    return _value(spec, values, None if project is None else project.pk)


def get_flags(project=None) -> dict[str, Any]:
    """Every flag's value for `project` (or globally) in one query, or none in an API request
    of a warm worker (memapp.stores.warm: every change of a flag is a save or a delete). The
    dict may be shared: read it, do not change it."""
    return remembered(("flags", None if project is None else project.pk), partial(_flags, project))


def _flags(project) -> dict[str, Any]:
    scope = Q(project__isnull=True)
    if project is not None:
        scope |= Q(project=project)
    rows = FlagValue.objects.filter(scope).values_list("name", "project_id", "value")
    return _resolve(_stored(rows), None if project is None else project.pk)


def index_caps(flags: dict[str, Any]) -> tuple[int, int]:
    """MEMORY.md's caps in force, (lines, bytes), from a project's flags (`get_flags`,
    `flags_for_projects`): the one place that reads the two flags (docs/design.md §5, §11)."""
    return flags["index_max_lines"], flags["index_max_bytes"]


def project_index_caps(project=None) -> tuple[int, int]:
    """MEMORY.md's caps in force for `project` (None: globally), in one query."""
    return index_caps(get_flags(project))


def index_caps_by_project(project_ids) -> dict[int | None, tuple[int, int]]:
    """MEMORY.md's caps in force per project id (None: globally), in one query."""
    return {pk: index_caps(flags) for pk, flags in flags_for_projects(project_ids).items()}


def flags_for_projects(project_ids) -> dict[int | None, dict[str, Any]]:
    """Every flag's value for each project id (None: globally), in one query: for a sweep
    over many stores."""
    ids = set(project_ids)
    scope = Q(project__isnull=True) | Q(project_id__in=[pk for pk in ids if pk is not None])
    stored = _stored(FlagValue.objects.filter(scope).values_list("name", "project_id", "value"))
    return {pk: _resolve(stored, pk) for pk in ids | {None}}


def _stored(rows) -> dict[str, dict]:
    stored: dict[str, dict] = {}
    for name, project_id, value in rows:
        stored.setdefault(name, {})[project_id] = value
    return stored


def _resolve(stored: dict[str, dict], project_id: int | None) -> dict[str, Any]:
    return {name: _value(spec, stored.get(name, {}), project_id) for name, spec in FLAGS.items()}


def _value(spec: FlagSpec, found: dict[int | None, Any], project_id: int | None) -> Any:
    """The flag's value for the project from its stored values by project id (None: global):
    its own, else the global one, else the default. A stored value the flag no longer accepts
    (set before a bound was added) counts as unset."""
    for scope in dict.fromkeys((project_id, None)):
        if scope in found and (scope is None or not spec.global_only):
            try:
                return spec.clean(found[scope])
            except FlagError:
                continue
    return spec.default


@transaction.atomic
def set_flag(name: str, value: Any, project=None, user=None, note: str = "") -> Any:
    """Validate and store a flag value (global when `project` is None), audited as an event."""
    spec = flag_spec(name)
    if project is not None and spec.global_only:
        raise FlagError(f"{name} is global only; it cannot be overridden per project")
    clean = spec.clean(value)
    old = get_flag(name, project)
    FlagValue.objects.update_or_create(
        name=name,
        project=project,
        defaults={"value": clean, "updated_at": timezone.now(), "updated_by": user},
    )
    scope = project.key if project is not None else "global"
    record_event(
        "flag_changed",
        project=project,
        user=user,
        name=name,
        scope=scope,
        old=old,
        new=clean,
        note=note,
    )
    return clean


@transaction.atomic
def clear_flag_override(name: str, project, user=None, note: str = "") -> None:
    """Remove a project's override (or, with `project` None, the global value) so the next
    level applies again: the global value, else the default. Audited when something was removed.
    """
    flag_spec(name)
    old = get_flag(name, project)
    deleted, _ = FlagValue.objects.filter(name=name, project=project).delete()
    if deleted:
        record_event(
            "flag_changed",
            project=project,
            user=user,
            name=name,
            scope=project.key if project is not None else "global",
            old=old,
            new=get_flag(name, project),
            note=note or ("override removed" if project is not None else "reset to default"),
        )
