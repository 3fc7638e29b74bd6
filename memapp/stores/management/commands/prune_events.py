"""`manage.py prune_events`: delete events older than the retention period."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from memapp.stores.events import prune_events
from memapp.stores.management.base import OneShotCommand


class Command(OneShotCommand):
    help = "Delete events older than MEMHUB_EVENT_RETENTION_DAYS days (0 keeps them all)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="keep this many days instead of MEMHUB_EVENT_RETENTION_DAYS",
        )

    def handle(self, *args, days, **options):
        days = settings.MEMHUB_EVENT_RETENTION_DAYS if days is None else days
        if days < 0:
            raise CommandError("--days must be 0 or more")
        if days == 0:
            self.stdout.write("Retention is 0 days: events are kept.")
            return
        deleted = prune_events(days)
        self.stdout.write(
            f"Deleted {deleted} event{'s' if deleted != 1 else ''} older than {days} days."
        )
