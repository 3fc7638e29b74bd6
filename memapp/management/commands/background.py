"""`manage.py background`: the live mirror and the clock of periodic tasks (memapp.background)."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand

from memapp.background import run_background


class Command(BaseCommand):
    help = "Follow the memory base (discovery, live rescans) and enqueue periodic tasks."

    def handle(self, *args, **options):
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        self.stdout.write("memhub background: live mirror and task clock started.")
        self.stdout.flush()
        run_background(stop)
        self.stdout.write("memhub background stopped.")
