"""Run memhub: the HTTP server (memapp.http_server) on MEMHUB_BIND (127.0.0.1:8000 unless told
otherwise), the task worker and the background process (live mirror and task clock), stopped
together.

What they print goes to log files in `<data dir>/logs/`, so the terminal ends with one box: the
address, how to log in and where the logs are (docs/design.md §22)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from memapp import http_server
from memapp.stores.first_admin import FirstAdmin, do_ensure_admin

START_SECONDS = 60
# A bind on every address: the box names the loopback one, which a browser here can open and
# ALLOWED_HOSTS holds (the wildcard itself is no host name the site answers).
LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]"}


def banner(url: str, logs: Path, admin: FirstAdmin | None) -> str:
    """The box a person reads when memhub has started."""
    lines = [f"memhub is running at {url}", ""]
    if admin is not None:
        lines.append(f"Log in as   {admin.username}")
        if admin.generated_password:
            lines += [
                f"Password    {admin.generated_password}",
                "            (shown this once: change it after logging in)",
            ]
        elif admin.created:
            lines.append("Password    the one in MEMHUB_ADMIN_PASSWORD")
        else:
            lines.append(f"Password    yours (manage.py changepassword {admin.username} resets it)")
        lines.append("")
    lines += [f"Logs        {logs}/", "Ctrl-C stops memhub."]
    width = max(len(line) for line in lines)
    rule = "─" * (width + 2)
    body = [f"│ {line.ljust(width)} │" for line in lines]
    return "\n".join([f"┌{rule}┐", *body, f"└{rule}┘"])


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=0.5):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class Command(BaseCommand):
    help = "Serve memhub on MEMHUB_BIND, with the task worker and the live mirror."

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument(
            "--no-background",
            action="store_true",
            help="no task worker and no background process (they run elsewhere)",
        )
        parser.add_argument(
            "--ensure-admin",
            action="store_true",
            help="create the first admin if there is none, and show how to log in",
        )

    def handle(self, *args, workers, no_background, ensure_admin, **options):
        admin = do_ensure_admin() if ensure_admin else None
        bind_host, port = settings.MEMHUB_BIND
        host = LOOPBACK.get(bind_host, bind_host)
        logs = settings.MEMHUB_DATA_DIR / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        manage = str(settings.BASE_DIR / "manage.py")
        children: list[subprocess.Popen] = []

        def spawn(command: list[str], log_name: str, **options) -> subprocess.Popen:
            with (logs / log_name).open("ab") as log:
                child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **options)
            children.append(child)
            return child

        if not no_background:
            # Without the system checks this command has just run: each imports every URL
            # and view, nearly a second of CPU, which neither process serves.
            worker = ["db_worker", "--no-reload", "--interval", "0.5", "--skip-checks"]
            spawn([sys.executable, manage, *worker], "worker.log")
            spawn([sys.executable, manage, "background", "--skip-checks"], "background.log")
        self.stdout.write(f"memhub: starting on http://{host}:{port}/ …")
        self.stdout.flush()
        server = spawn(
            http_server.command(f"{bind_host}:{port}", workers, logs / "access.log"),
            "server.log",
            # Its own process group, and Ctrl-C or SIGTERM passed on: only its master is told
            # to stop, and it stops its workers. A worker signalled itself may exit before the
            # master knows, which it reports as a crash (exit 1).
            process_group=0,
        )
        for stop in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop, lambda *_: server.terminate())
        try:
            self._announce(server, host, port, logs, admin)
            code = server.wait()
        finally:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            for child in children:
                child.wait()
        raise SystemExit(code)

    def _announce(self, server, host: str, port: int, logs: Path, admin) -> None:
        """The box once the site answers; the server's last log lines if it never does."""
        deadline = time.monotonic() + START_SECONDS
        while server.poll() is None and time.monotonic() < deadline:
            if _listening(host, port):
                self.stdout.write(banner(f"http://{host}:{port}/", logs, admin))
                self.stdout.flush()
                return
            time.sleep(0.1)
        self.stderr.write(
            f"memhub: the server did not start; the end of {logs / 'server.log'}:\n"
            + _tail(logs / "server.log")
        )
        if server.poll() is None:
            server.terminate()
