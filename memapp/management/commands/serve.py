"""Run memhub: gunicorn on MEMHUB_BIND (127.0.0.1:8000 unless told otherwise), the task worker
and the background process (live mirror and task clock), stopped together."""

import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve memhub with gunicorn on MEMHUB_BIND, with the task worker and the live mirror."

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument(
            "--no-background",
            action="store_true",
            help="no task worker and no background process (they run elsewhere)",
        )

    def handle(self, *args, workers, no_background, **options):
        host, port = settings.MEMHUB_BIND
        bind = f"{host}:{port}"
        logs = settings.MEMHUB_DATA_DIR / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        manage = str(settings.BASE_DIR / "manage.py")
        children = []
        if not no_background:
            children.append(
                subprocess.Popen(
                    [sys.executable, manage, "db_worker", "--no-reload", "--interval", "0.5"]
                )
            )
            children.append(subprocess.Popen([sys.executable, manage, "background"]))
        self.stdout.write(f"memhub is starting on http://{bind}/ (Ctrl-C stops it)")
        self.stdout.write(f"access log: {logs / 'access.log'}")
        self.stdout.flush()
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "memapp.wsgi:application",
                "--bind",
                bind,
                "--workers",
                str(workers),
                # Load the app before forking (memapp.wsgi loads all of it), and let each
                # worker open its connection before it takes a request: a worker answers its
                # first request about as fast as its hundredth (a hook waiting 0.7 s for the
                # first prompt gets its memory; python -m memapp.bench --hooks measures it).
                "--preload",
                "--config",
                "python:memapp.gunicorn_conf",
                "--access-logfile",
                str(logs / "access.log"),
                # One control socket per data dir: two memhub instances never share one.
                "--control-socket",
                str(settings.MEMHUB_DATA_DIR / "gunicorn.ctl"),
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
