"""`manage.py prune_trash`: empty what has been in the trash longer than its keeping period."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from memapp.stores.history import prune_trash
from memapp.stores.management.base import OneShotCommand


class Command(OneShotCommand):
    help = "Delete forgotten memories (and their history) older than MEMHUB_TRASH_DAYS days."

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="keep this many days instead of MEMHUB_TRASH_DAYS",
        )

    def handle(self, *args, days, **options):
        days = settings.MEMHUB_TRASH_DAYS if days is None else days
        if days < 1:
            raise CommandError("--days must be 1 or more")
        deleted = prune_trash(days)
        self.stdout.write(
            f"Emptied {deleted} trash item{'s' if deleted != 1 else ''} older than {days} days."
        )
