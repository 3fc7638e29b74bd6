"""The HTTP server `manage.py serve`, the benchmark and the tests run: granian's WSGI server
around `memapp.wsgi` (docs/design.md §21).

`python -m memapp.http_server --bind HOST:PORT [--workers N] [--access-log FILE]`

granian parses HTTP in Rust and hands each request to one of a worker's Python threads; gunicorn's
threaded worker did that in Python, about a quarter of a recall's CPU. The app is loaded and its
query machinery built here, before the workers fork, so a worker answers its first request about
as fast as its hundredth; each thread opens its own database connection on its first request.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import socket
import sys
from pathlib import Path

from granian.constants import HTTPModes, Interfaces
from granian.server import Server

from memapp.env import parse_bind
from memapp.log_lines import FILTERS

THREADS = 4  # a request waiting for the recall model holds one thread, not the whole worker
IDLE_THREAD_SECONDS = 600  # an unused thread is kept this long (granian's longest)


def _warm_queries() -> None:
    """One query per model of memhub's, which finds nothing but builds each model's query
    machinery; the connection it opened is closed, since forked workers must not share it."""
    from django.apps import apps
    from django.db import DatabaseError, connections

    for model in apps.get_models():
        if model._meta.app_label in ("auth", "memapp", "teamsync", "snapshots", "lifecycle"):
            with contextlib.suppress(DatabaseError):  # e.g. before the first migrate
                model.objects.filter(pk__isnull=True).first()
    connections.close_all()


def _application():
    """What each worker serves: the app loaded before the fork, given each request without the
    variables of the server's own environment, which granian adds to every request's (a
    password in DATABASE_URL would be in `request.META`; an `HTTP_PROXY` would pass for a
    header the client sent)."""
    from memapp.wsgi import application

    inherited = tuple(os.environ.items())

    def served(environ, start_response):
        for name, value in inherited:
            if environ.get(name) == value:  # a header the client sent has its own value
                del environ[name]
        return application(environ, start_response)

    return served


def _logging(access_log: Path | None) -> dict:
    """granian's lines to standard error; each request's line to `access_log`, if given."""
    formatters = {
        "generic": {"format": "[%(asctime)s] [%(levelname)s] %(message)s"},
        "access": {"format": "%(message)s"},
    }
    console = {"class": "logging.StreamHandler", "formatter": "generic", "filters": ["secrets"]}
    handlers: dict = {"console": console}
    loggers = {"_granian": {"handlers": ["console"], "level": "INFO", "propagate": False}}
    if access_log is not None:
        handlers["access"] = {
            "class": "logging.FileHandler",
            "formatter": "access",
            "filename": str(access_log),
            "filters": ["secrets"],  # a request's line holds its path and query as sent
        }
        loggers["granian.access"] = {"handlers": ["access"], "level": "INFO", "propagate": False}
    return {
        "formatters": formatters,
        "filters": FILTERS,
        "handlers": handlers,
        "loggers": loggers,
    }


def bind_address(value: str) -> tuple[str, int]:
    """`HOST:PORT` (as MEMHUB_BIND takes it) as the IP address and port to listen on: granian
    takes addresses only, so a name (`localhost`) is looked up as gunicorn did."""
    try:
        host, port = parse_bind(value)
        found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    except socket.gaierror as exc:
        raise argparse.ArgumentTypeError(f"{host!r}: {exc.strerror}") from None
    return found[0][4][0], port


def command(bind: str, workers: int, access_log: Path | None = None) -> list[str]:
    """The command that starts this server, as `manage.py serve`, the benchmark and the tests
    run it."""
    line = [sys.executable, "-m", "memapp.http_server", "--bind", bind, "--workers", str(workers)]
    return line + (["--access-log", str(access_log)] if access_log is not None else [])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m memapp.http_server", description=__doc__)
    parser.add_argument("--bind", type=bind_address, required=True, metavar="HOST:PORT")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--access-log", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memapp.settings")
    import memapp.wsgi  # noqa: F401 (the whole app, loaded before the workers fork)

    _warm_queries()
    # Frozen, what the workers inherit is never walked by their garbage collector, nor copied
    # into each worker's memory when it would be (docs/design.md §21).
    gc.freeze()
    host, port = args.bind
    server = Server(
        "memapp.wsgi:application",
        address=host,
        port=port,
        interface=Interfaces.WSGI,
        http=HTTPModes.http1,
        websockets=False,
        workers=args.workers,
        blocking_threads=THREADS,
        blocking_threads_idle_timeout=IDLE_THREAD_SECONDS,
        respawn_failed_workers=True,  # a worker that died is replaced, not the end of the site
        log_dictconfig=_logging(args.access_log),
        log_access=args.access_log is not None,
    )
    server.serve(target_loader=_application, wrap_loader=False)


if __name__ == "__main__":
    main()
