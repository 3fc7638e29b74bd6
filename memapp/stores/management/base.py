"""The base of memhub's one-shot management commands."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class OneShotCommand(BaseCommand):
    """A command that does one job and ends: it skips Django's system checks, which import
    every URL, view and admin (a quarter of a second of each run, and the team-sync tests and
    scripts run these often). `serve` runs the checks when the site starts."""

    requires_system_checks: list[str] = []
