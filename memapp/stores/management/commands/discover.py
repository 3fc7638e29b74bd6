"""Discover the local agent memory directories (docs/design.md §1) and mirror them as stores."""

from django.conf import settings

from memapp.memdir.paths import memory_base
from memapp.stores.discovery import discover_local_stores
from memapp.stores.management.base import OneShotCommand


class Command(OneShotCommand):
    help = "Find ~/.claude memory directories (or the memory base) and refresh their stores."

    def handle(self, *args, **options):
        if not settings.MEMHUB_DISCOVER:
            self.stdout.write("Discovery is off (MEMHUB_DISCOVER=0).")
            return
        base = memory_base()
        self.stdout.write(f"Looking for memory directories under {base} …")

        def show(store):
            self.stdout.write(f"  {store.label:<28} {store.file_count:>6} files  {store.path}")

        result = discover_local_stores(base, progress=show)
        self.stdout.write(
            f"Found {result.found} memory director{'y' if result.found == 1 else 'ies'}"
            + (f"; {result.removed} no longer present." if result.removed else ".")
        )
