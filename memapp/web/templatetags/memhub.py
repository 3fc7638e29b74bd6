"""Template filters that speak the core's language (ages as agents see them)."""

import time

from django import template
from django.utils.html import format_html

from memapp.memdir.freshness import memory_age, memory_age_days
from memapp.stores.events import ordered_fields

register = template.Library()


@register.filter
def age(mtime_ms: int, now_ms: int | None = None) -> str:
    return memory_age(mtime_ms, now_ms)


@register.filter
def is_stale(mtime_ms: int, stale_days: int) -> bool:
    return memory_age_days(mtime_ms, int(time.time() * 1000)) > int(stale_days)


@register.filter
def percent(part: int, whole: int) -> int:
    return min(100, round(100 * part / whole)) if whole else 0


@register.simple_tag
def bar_fill(percent: float) -> str:
    """A meter's filled part as an SVG rect `percent` wide: a width attribute, where a style
    attribute would need 'unsafe-inline' in the Content-Security-Policy."""
    width = max(0.0, min(100.0, float(percent)))
    return format_html(
        '<svg class="fill" viewBox="0 0 100 1" preserveAspectRatio="none" aria-hidden="true" '
        'focusable="false"><rect width="{}" height="1"></rect></svg>',
        f"{width:g}",
    )


@register.filter
def event_fields(event) -> list[tuple[str, object]]:
    """An event's fields in its kind's order, whatever order the database keeps them in."""
    return ordered_fields(event)


@register.filter
def words(code: str) -> str:
    """A snake_case code as words (`relative_dates` → `relative dates`, `why_how` → `Why/How`)."""
    return {"why_how": "Why/How"}.get(str(code), str(code).replace("_", " "))


@register.simple_tag(takes_context=True)
def nav_badge(context, page: str) -> str:
    """A badge with how many things wait on `page` (a URL name) for the person, if any."""
    counts = context.get("waiting_by_page") or {}
    count = counts.get(page, 0)
    if not count:
        return ""
    return format_html(
        '<span class="nav-badge">{}<span class="visually-hidden"> waiting for you</span></span>',
        count,
    )
