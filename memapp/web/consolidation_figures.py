"""The dashboard's consolidation figures, from `consolidation_run` events (docs/design.md §12,
§14.7): how full each index was before a store's last consolidation and after what it proposed,
and how many stale memories consolidations found, day by day."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.utils.safestring import mark_safe

from memapp.stores.flags import index_caps_by_project
from memapp.stores.models import Event
from memapp.web.charts import Series, column_chart, meter
from memapp.web.dashboard_data import day_start

__all__ = ["consolidation_figures"]


@dataclass
class CapChange:
    """One store's index against its caps: before its last consolidation, and after it."""

    event: Event
    max_lines: int
    max_bytes: int

    def _field(self, name: str) -> int:
        return int(self.event.fields.get(name) or 0)

    @property
    def charts(self) -> list[tuple]:
        """(label, before, after, meter before, meter after, cap) for lines, then bytes."""
        rows = []
        for label, cap in (("lines", self.max_lines), ("bytes", self.max_bytes)):
            before, after = (
                self._field(f"index_{label}_before"),
                self._field(f"index_{label}_after"),
            )
            rows.append(
                (
                    label,
                    before,
                    after,
                    mark_safe(meter(before, cap, title=f"MEMORY.md {label} before")),
                    mark_safe(meter(after, cap, title=f"MEMORY.md {label} after")),
                    cap,
                )
            )
        return rows


def _latest_per_store(events) -> list[Event]:
    latest: dict[int, Event] = {}
    for event in events.order_by("created_at", "id"):
        if event.store_id is not None:
            latest[event.store_id] = event
    return list(latest.values())


def _stale_per_day(visible, days: list[datetime.date]) -> list[int]:
    """Per day, the stale memories the latest consolidation of each store had found by then
    (a store's figure carries over the days it did not run)."""
    runs = visible.filter(kind="consolidation_run", fields__stale__isnull=False)
    earlier = _latest_per_store(runs.filter(created_at__lt=day_start(days[0])))
    known = {event.store_id: int(event.fields["stale"]) for event in earlier}
    rows = (
        runs.filter(created_at__gte=day_start(days[0]))
        .annotate(day=TruncDate("created_at"))
        .order_by("created_at", "id")
        .values_list("day", "store_id", "fields")
    )
    by_day: dict[datetime.date, list[tuple[int, int]]] = {}
    for day, store_id, fields in rows:
        by_day.setdefault(day, []).append((store_id, int(fields["stale"])))
    totals = []
    for day in days:
        for store_id, stale in by_day.get(day, []):
            known[store_id] = stale
        totals.append(sum(known.values()))
    return totals


def consolidation_figures(visible, totals, days: list[datetime.date]) -> dict:
    """The figures for the dashboard from the events the viewer may see (`visible`, already
    narrowed to a project when one is chosen) and their totals over the window (`totals`)."""
    runs = visible.filter(kind="consolidation_run", fields__outcome="proposed")
    latest = _latest_per_store(runs.select_related("store__project"))
    caps = index_caps_by_project(
        [e.store.project_id for e in latest if e.store and e.store.project_id]
    )
    changes = [
        CapChange(event, *caps[event.store.project_id])
        for event in latest
        if event.store is not None and event.fields.get("index_lines_before") is not None
    ]
    stale = _stale_per_day(visible, days)
    labels = [f"{day:%b} {day.day}" for day in days]
    every = 1 if len(days) <= 14 else 7 if len(days) <= 60 else 14
    chart = column_chart(
        labels,
        [Series("stale memories", stale, "warn")],
        title="Stale memories found by consolidation",
        label_every=every,
    )
    runs_in_window = totals.filter(kind="consolidation_run").aggregate(n=Sum("count"))["n"]
    return {
        "consolidation_runs": runs_in_window or 0,
        "cap_changes": changes,
        "stale_chart": mark_safe(chart),  # charts.py escapes every text it draws
        "stale_now": stale[-1] if stale else 0,
    }
