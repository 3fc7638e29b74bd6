"""Typed readers for environment settings that fail loudly on bad values.

Every variable memhub reads is documented in the README. A value that cannot be understood
raises ImproperlyConfigured at start-up instead of being silently replaced by a default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def _raw(name: str, env: Mapping[str, str] | None) -> str | None:
    value = (os.environ if env is None else env).get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str = "", env: Mapping[str, str] | None = None) -> str:
    value = _raw(name, env)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool, env: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, env)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(
        f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)"
    )


def env_int(
    name: str, default: int, minimum: int | None = None, env: Mapping[str, str] | None = None
) -> int:
    value = _raw(name, env)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    return number


def env_float(
    name: str, default: float, minimum: float | None = None, env: Mapping[str, str] | None = None
) -> float:
    value = _raw(name, env)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={value!r} is not a finite number")
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    return number


def env_path(name: str, default: Path, env: Mapping[str, str] | None = None) -> Path:
    value = _raw(name, env)
    if value is None or value == "":
        return default
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise ImproperlyConfigured(f"{name}={value!r} must be an absolute path")
    return path


_BIND = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-]+):(?P<port>\d{1,5})$")


def parse_bind(value: str) -> tuple[str, int]:
    """`host:port` (an IPv6 address in brackets) as its host and port; ValueError otherwise."""
    match = _BIND.match(value)
    if not match:
        raise ValueError(f"{value!r} is not host:port (e.g. 127.0.0.1:8000)")
    port = int(match["port"])
    if not 0 < port < 65536:
        raise ValueError(f"{value!r}: port must be 1-65535")
    return match["host"], port


def env_bind(name: str, default: str, env: Mapping[str, str] | None = None) -> tuple[str, int]:
    """Read a `host:port` address; a bare port means 127.0.0.1 so nothing is exposed by accident."""
    value = env_str(name, default, env)
    if value.isdigit():
        value = f"127.0.0.1:{value}"
    try:
        return parse_bind(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={exc}") from None


def env_cache(name: str, default: str, env: Mapping[str, str] | None = None) -> dict:
    """Django's CACHES entry for a cache URL: `db://` (a table in the database, the default:
    shared by every worker and machine that shares the database), `redis://…` / `rediss://…`
    (needs the `redis` extra), or `locmem://` (this process only: one worker, or tests)."""
    value = env_str(name, default, env)
    scheme, sep, rest = value.partition("://")
    if sep and scheme == "db":
        table = rest.strip("/") or "memhub_cache"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", table):
            raise ImproperlyConfigured(f"{name}={value!r}: {table!r} is not a table name")
        return {
            "BACKEND": "memapp.stores.cache_table.DatabaseCache",  # each write one statement
            "LOCATION": table,
            # Django's default of 300 entries would evict live sessions' budgets.
            "OPTIONS": {"MAX_ENTRIES": 50_000},
        }
    if sep and scheme in ("redis", "rediss") and rest:
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": value}
    if sep and scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": rest}
    raise ImproperlyConfigured(
        f"{name}={value!r} is not a cache URL (use db://, redis://host:6379/0 or locmem://)"
    )


TASK_BACKENDS = {
    "database": "django_tasks_db.DatabaseBackend",
    "rq": "django_tasks_rq.RQBackend",
    "immediate": "django_tasks.backends.immediate.ImmediateBackend",
}


def env_tasks(name: str, default: str, env: Mapping[str, str] | None = None) -> dict:
    """Django's TASKS entry for a backend name: `database` (the default: the `db_worker` that
    `manage.py serve` starts runs them), `rq` (Redis, workers on any machine; needs the `redis`
    extra and MEMHUB_RQ_URL) or `immediate` (run at once, in the process that asks)."""
    value = env_str(name, default, env).lower()
    if value not in TASK_BACKENDS:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(TASK_BACKENDS)}")
    return {"BACKEND": TASK_BACKENDS[value], "QUEUES": ["default"]}


_RATE = re.compile(r"(?P<count>[0-9]+)/(?P<period>s|sec|second|m|min|minute|h|hour|d|day)")


def env_rate(name: str, default: str, env: Mapping[str, str] | None = None) -> str:
    """A request rate in DRF's syntax, `<count>/<period>` (`1200/min`, `10/s`, `5000/day`)."""
    value = env_str(name, default, env)
    match = _RATE.fullmatch(value)
    if match is None or int(match["count"]) < 1:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a rate (use <count>/<period> with a period of "
            "s, min, hour or day, e.g. 1200/min)"
        )
    return value


_DATABASE_SCHEMES = {"postgres", "postgresql", "pgsql", "sqlite"}


def env_database(name: str, env: Mapping[str, str] | None = None, **options) -> dict | None:
    """Django's DATABASES entry for a database URL (PostgreSQL or SQLite), or None when unset.
    `options` go to dj_database_url (connection age, health checks)."""
    value = env_str(name, "", env)
    if not value:
        return None
    scheme = value.partition("://")[0].lower()
    accepted = "use postgres://user:password@host:5432/dbname or sqlite:////absolute/file.sqlite3"
    if scheme not in _DATABASE_SCHEMES:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a database URL memhub supports ({accepted})"
        )
    try:
        config = dj_database_url.parse(value, **options)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} cannot be read: {exc} ({accepted})") from None
    if not config.get("NAME"):
        raise ImproperlyConfigured(f"{name}={value!r} names no database ({accepted})")
    return config


def env_url(name: str, default: str = "", env: Mapping[str, str] | None = None) -> str:
    """An http(s) URL with a host, or the default when unset."""
    value = env_str(name, default, env)
    if value and not re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", value):
        raise ImproperlyConfigured(f"{name}={value!r} is not an http:// or https:// URL")
    return value


def env_origins(name: str, env: Mapping[str, str] | None = None) -> list[str]:
    """A comma-separated list of origins, each `http(s)://host[:port]` and nothing after."""
    origins = [item.strip() for item in env_str(name, "", env).split(",") if item.strip()]
    for origin in origins:
        if not re.fullmatch(r"https?://[^\s/?#]+", origin):
            raise ImproperlyConfigured(
                f"{name}: {origin!r} is not an origin (use https://host or http://host:port, "
                "comma-separated)"
            )
    return origins


def env_hosts(name: str, default: str, env: Mapping[str, str] | None = None) -> list[str]:
    """A comma-separated list of host names as Django's ALLOWED_HOSTS takes them (`.example.com`
    for every subdomain, `*` for any host, `[::1]`)."""
    hosts = [item.strip() for item in env_str(name, default, env).split(",") if item.strip()]
    for host in hosts:
        if not re.fullmatch(r"\*|\.?[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]", host):
            raise ImproperlyConfigured(
                f"{name}: {host!r} is not a host name (use names such as memhub.example.com, "
                ".example.com or [::1], comma-separated)"
            )
    return hosts


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def env_log_level(name: str, default: str, env: Mapping[str, str] | None = None) -> str:
    value = env_str(name, default, env).upper()
    if value not in LOG_LEVELS:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(LOG_LEVELS)}")
    return value


def env_redis_url(name: str, env: Mapping[str, str] | None = None) -> str:
    value = env_str(name, "", env)
    if value and not re.fullmatch(r"rediss?://\S+", value):
        raise ImproperlyConfigured(f"{name}={value!r} is not a Redis URL (redis://host:6379/0)")
    return value
