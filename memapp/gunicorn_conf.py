"""gunicorn's settings for `manage.py serve` and the benchmark (`--config
python:memapp.gunicorn_conf`)."""

import contextlib
import threading

# Each worker answers on a few threads and keeps a client's connection open between requests
# (docs/design.md §21): a connection per request cost each recall its TCP setup and teardown
# on both sides, and a sync worker waited for the client to close before taking the next one.
# A request waiting for the recall model holds one thread, not the whole worker.
worker_class = "gthread"
threads = 4
keepalive = 5  # seconds an idle connection stays open

WARM_TIMEOUT_S = 30


def _warm_connection() -> None:
    """One query per model of memhub's, which finds nothing but builds each model's query
    machinery and opens this thread's database connection (kept for its requests)."""
    from django.apps import apps
    from django.db import DatabaseError

    for model in apps.get_models():
        if model._meta.app_label in ("auth", "memapp", "teamsync", "snapshots", "lifecycle"):
            with contextlib.suppress(DatabaseError):  # e.g. before the first migrate
                model.objects.filter(pk__isnull=True).first()


def post_worker_init(worker) -> None:
    """Before a worker takes its first request, each of its request threads opens its database
    connection, so a worker's first requests cost what later ones do (docs/design.md §21).
    The threads wait for one another, so that the pool starts every one of them."""
    pool = getattr(worker, "tpool", None)
    if pool is None:  # a sync worker answers on its own thread
        _warm_connection()
        return
    ready = threading.Barrier(worker.cfg.threads)

    def warm() -> None:
        _warm_connection()
        with contextlib.suppress(threading.BrokenBarrierError):
            ready.wait(WARM_TIMEOUT_S)

    for future in [pool.submit(warm) for _ in range(worker.cfg.threads)]:
        future.result()
