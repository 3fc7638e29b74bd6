"""gunicorn's settings for `manage.py serve` (`--config python:memapp.gunicorn_conf`)."""

import contextlib


def post_worker_init(worker) -> None:
    """Before a worker takes its first request: one query per model of memhub's, which finds
    nothing but builds each model's query machinery and opens the worker's own database
    connection (kept for its requests), so its first request costs what later ones do
    (docs/design.md §21)."""
    from django.apps import apps
    from django.db import DatabaseError

    for model in apps.get_models():
        if model._meta.app_label in ("auth", "memapp", "teamsync", "snapshots", "lifecycle"):
            with contextlib.suppress(DatabaseError):  # e.g. before the first migrate
                model.objects.filter(pk__isnull=True).first()
