"""Run the site with gunicorn on MEMHUB_BIND (127.0.0.1:8000 unless told otherwise)."""

import os
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve memhub with gunicorn on MEMHUB_BIND."

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=2)

    def handle(self, *args, workers, **options):
        host, port = settings.MEMHUB_BIND
        bind = f"{host}:{port}"
        self.stdout.write(f"memhub is starting on http://{bind}/ (Ctrl-C stops it)")
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        argv = [gunicorn, "memapp.wsgi:application", "--bind", bind, "--workers", str(workers)]
        argv += ["--access-logfile", "-", "--chdir", str(settings.BASE_DIR)]
        sys.stdout.flush()
        os.execv(gunicorn, argv)
