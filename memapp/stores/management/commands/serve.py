"""Run the site with gunicorn on MEMHUB_BIND (127.0.0.1:8000 unless told otherwise), and the
team sync worker beside it."""

import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve memhub with gunicorn on MEMHUB_BIND, with the team sync worker."

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument("--no-worker", action="store_true", help="no team sync worker")

    def handle(self, *args, workers, no_worker, **options):
        host, port = settings.MEMHUB_BIND
        bind = f"{host}:{port}"
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        children = []
        if not no_worker:
            manage = str(settings.BASE_DIR / "manage.py")
            children.append(subprocess.Popen([sys.executable, manage, "teamsync", "run"]))
        self.stdout.write(f"memhub is starting on http://{bind}/ (Ctrl-C stops it)")
        self.stdout.flush()
        server = subprocess.Popen(
            [
                gunicorn,
                "memapp.wsgi:application",
                "--bind",
                bind,
                "--workers",
                str(workers),
                "--access-logfile",
                "-",
                "--chdir",
                str(settings.BASE_DIR),
            ]
        )
        children.append(server)
        signal.signal(signal.SIGTERM, lambda *_: server.terminate())
        try:
            code = server.wait()
        except KeyboardInterrupt:
            code = server.wait()
        finally:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            for child in children:
                child.wait()
        raise SystemExit(code)
