"""gunicorn's settings for `manage.py serve` (`--config python:memapp.gunicorn_conf`)."""


def post_worker_init(worker) -> None:
    """Each worker opens its database connection and runs the queries every request makes
    before it takes its first request (docs/design.md §21)."""
    from memapp.wsgi import warm_worker

    warm_worker()
