"""The base of memhub's one-shot management commands."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor


class OneShotCommand(BaseCommand):
    """A command that does one job and ends: it skips Django's system checks, which import
    every URL, view and admin (a quarter of a second of each run, and the team-sync tests and
    scripts run these often). `serve` runs the checks when the site starts.

    Run before `migrate`, such a command would end in a traceback about a missing table; it
    says in one sentence what to do instead."""

    requires_system_checks: list[str] = []

    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except DatabaseError as exc:
            if not _not_migrated():
                raise
            raise CommandError(
                "memhub's database is not set up yet (or is behind this version): run "
                "`python manage.py migrate` first"
            ) from exc


def _not_migrated() -> bool:
    """Whether the database answers but lacks migrations. Any doubt is False, so the
    command's own error is shown: a server that refuses us, a transaction already failed."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.in_atomic_block:
        return False
    try:
        executor = MigrationExecutor(connection)
        return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    except Exception:  # noqa: BLE001 (the command's error is the one to report)
        return False
