"""The figures behind the dashboard: memory ages, index caps, recall and sync over time.

Every function takes querysets already narrowed to what the viewer may see
(`Store.objects.visible_to`, `EventTotal.objects.visible_to`) and answers with a few aggregate
queries, never one per store or per day. Events are counted from their per-day totals
(docs/design.md §12.2), so the time taken follows the days shown, not the events kept.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import Count, Q, Sum
from django.utils import timezone

from memapp.stores.flags import index_caps_by_project
from memapp.stores.models import DAY_MS, MemoryFile, Store

AGE_COLOURS = ["fresh", "week", "month", "stale"]


# -- memory ages ----------------------------------------------------------------------------


@dataclass
class StoreAges:
    store: Store
    counts: list[int]

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def stale(self) -> int:
        return self.counts[-1]

    @property
    def stale_pct(self) -> int:
        return round(100 * self.stale / self.total) if self.total else 0


def age_buckets(stale_days: int) -> list[tuple[int, str]]:
    """(younger than N days, label) per bucket; the last bucket, stale, has N = 0 (no limit).

    Stale means older than `stale_days`, as on the home page.
    """
    edges = [edge for edge in (2, 8) if edge < stale_days] + [stale_days]
    buckets, low = [], 0
    for edge in edges:
        if low == 0:
            label = {1: "today", 2: "today or yesterday"}.get(edge, f"under {edge} days")
        else:
            label = f"{low}–{edge - 1} days"
        buckets.append((edge, label))
        low = edge
    return buckets + [(0, f"stale (older than {stale_days} days)")]


def memory_ages(stores: list[Store], now_ms: int, stale_days: int) -> list[StoreAges]:
    """How many memories of each store fall in each age bucket (one query)."""
    buckets = age_buckets(stale_days)
    counts, newer_than = {}, None
    for i, (edge, _) in enumerate(buckets):
        cond = Q(mtime_ms__gte=now_ms - edge * DAY_MS) if edge else Q()
        if newer_than is not None:
            cond &= Q(mtime_ms__lt=newer_than)
        counts[f"b{i}"] = Count("pk", filter=cond)
        newer_than = now_ms - edge * DAY_MS if edge else None
    rows = {
        row["store"]: row
        for row in MemoryFile.objects.filter(store__in=stores)
        .values("store")
        .annotate(**counts)
        .order_by()
    }
    result = []
    for store in stores:
        row = rows.get(store.pk)
        if row is not None:
            result.append(StoreAges(store, [row[f"b{i}"] for i in range(len(buckets))]))
    return result


# -- index caps -----------------------------------------------------------------------------


@dataclass
class IndexUsage:
    store: Store
    lines: int
    bytes: int
    max_lines: int
    max_bytes: int

    @property
    def worst_pct(self) -> int:
        return round(100 * max(self.lines / self.max_lines, self.bytes / self.max_bytes))


def index_usage(stores: list[Store]) -> list[IndexUsage]:
    """How full each store's MEMORY.md is against the caps in force now (as of its last scan)."""
    caps = index_caps_by_project([s.project_id for s in stores if s.project_id])
    rows = []
    for store in stores:
        stats = store.index_stats or {}
        if not stats.get("exists"):
            continue
        max_lines, max_bytes = caps[store.project_id]
        rows.append(IndexUsage(store, stats["lines"], stats["bytes"], max_lines, max_bytes))
    return sorted(rows, key=lambda row: -row.worst_pct)


# -- events over time -----------------------------------------------------------------------


def day_range(today: datetime.date, days: int) -> list[datetime.date]:
    return [today - datetime.timedelta(days=n) for n in range(days - 1, -1, -1)]


def day_start(day: datetime.date) -> datetime.datetime:
    """Local midnight of ``day``: ``created_at__gte=day_start(day)`` selects the events of
    ``created_at__date__gte=day`` with a range its index serves, where the date lookup
    converts every event's time (docs/scaling.md)."""
    return timezone.make_aware(datetime.datetime.combine(day, datetime.time.min))


def _per_day(rows, days: list[datetime.date], key: str) -> list[int]:
    by_day = {row["day"]: row[key] or 0 for row in rows}
    return [by_day.get(day, 0) for day in days]


@dataclass
class RecallActivity:
    days: list[datetime.date]
    answered: list[int]
    empty: list[int]
    queries: int = 0
    selected: int = 0
    empty_answers: int = 0
    selectors: list[tuple[str, int]] = field(default_factory=list)
    per_query: list[tuple[int, int]] = field(default_factory=list)  # (selected, queries)

    @property
    def selected_per_query(self) -> float:
        return self.selected / self.queries if self.queries else 0.0

    @property
    def empty_pct(self) -> int:
        return round(100 * self.empty_answers / self.queries) if self.queries else 0


def recall_activity(totals, days: list[datetime.date]) -> RecallActivity:
    """Recall queries per day (with and without an answer), selectors, memories per answer."""
    recalls = totals.filter(kind="recall").order_by()
    empty_answer = Q(value=0)
    daily = list(
        recalls.values("day").annotate(n=Sum("count"), empty=Sum("count", filter=empty_answer))
    )
    empty = _per_day(daily, days, "empty")
    total = _per_day(daily, days, "n")
    activity = RecallActivity(days, [t - e for t, e in zip(total, empty, strict=True)], empty)
    sums = recalls.aggregate(
        n=Sum("count"), selected=Sum("amount"), empty=Sum("count", filter=empty_answer)
    )
    activity.queries = sums["n"] or 0
    activity.selected = sums["selected"] or 0
    activity.empty_answers = sums["empty"] or 0
    activity.selectors = [
        (row["facet"] or "unknown", row["n"])
        for row in recalls.values("facet").annotate(n=Sum("count")).order_by("-n", "facet")
    ]
    activity.per_query = [
        (max(row["value"], 0), row["n"])
        for row in recalls.values("value").annotate(n=Sum("count")).order_by("value")
    ]
    return activity


@dataclass
class SyncHistory:
    days: list[datetime.date]
    pushes_ok: list[int]
    pushes_failed: list[int]
    pulls_changed: list[int]
    pulls_unchanged: list[int]
    conflicts: list[int]
    secret_blocks: list[int]
    capped: list[int]

    def total(self, name: str) -> int:
        return sum(getattr(self, name))


def _daily(totals, sums: dict, days: list[datetime.date]) -> list[list[int]]:
    """Each of `sums` (name: Sum over the totals) per day, in one query."""
    rows = list(totals.values("day").annotate(**sums).order_by())
    return [_per_day(rows, days, name) for name in sums]


def sync_history(totals, days: list[datetime.date]) -> SyncHistory:
    """Pushes, pulls, conflicts and files blocked for secrets per day (one query)."""
    sums = {
        "pushes_ok": Sum("count", filter=Q(kind="sync_push", facet="ok")),
        "pushes_failed": Sum("count", filter=Q(kind="sync_push", facet="failed")),
        "pulls_changed": Sum("count", filter=Q(kind="sync_pull", facet="changed")),
        "pulls_unchanged": Sum("count", filter=Q(kind="sync_pull", facet="unchanged")),
        "conflicts": Sum("count", filter=Q(kind="conflict", facet="open")),
        "secret_blocks": Sum("amount", filter=Q(kind="secret_skipped")),
        "capped": Sum("amount", filter=Q(kind="entries_capped")),
    }
    kinds = ["sync_push", "sync_pull", "conflict", "secret_skipped", "entries_capped"]
    return SyncHistory(days, *_daily(totals.filter(kind__in=kinds), sums, days))


@dataclass
class ExtractionActivity:
    """Extraction runs by outcome and proposal decisions, per day (docs/design.md §14)."""

    days: list[datetime.date]
    proposed: list[int]
    nothing: list[int]
    skipped: list[int]
    failed: list[int]
    approved: list[int]
    rejected: list[int]

    def total(self, name: str) -> int:
        return sum(getattr(self, name))

    @property
    def total_proposed(self) -> int:
        return self.total("proposed")

    @property
    def runs(self) -> int:
        return sum(self.total(name) for name in ("proposed", "nothing", "skipped", "failed"))

    @property
    def approval_pct(self) -> int | None:
        """Approved decisions (by a person or automatically) of all decisions; None when none."""
        decided = self.total("approved") + self.total("rejected")
        return round(100 * self.total("approved") / decided) if decided else None


def extraction_activity(totals, days: list[datetime.date]) -> ExtractionActivity:
    """Runs by outcome and decisions per day, in one query."""
    run = Q(kind="extraction_run")
    sums = {
        name: Sum("count", filter=run & Q(facet=name))
        for name in ("proposed", "nothing", "skipped", "failed")
    }
    decided = Q(kind="proposal_decided")
    sums["approved"] = Sum("count", filter=decided & Q(facet="approved"))
    sums["rejected"] = Sum("count", filter=decided & Q(facet="rejected"))
    kinds = ["extraction_run", "proposal_decided"]
    return ExtractionActivity(days, *_daily(totals.filter(kind__in=kinds), sums, days))
