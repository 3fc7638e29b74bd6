"""Django settings for memhub: one module, every value read from the environment (see README)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from memapp.env import (
    env_bind,
    env_bool,
    env_cache,
    env_database,
    env_float,
    env_hosts,
    env_int,
    env_log_level,
    env_origins,
    env_path,
    env_rate,
    env_redis_url,
    env_str,
    env_tasks,
    env_url,
)
from memapp.log_lines import FILTERS

BASE_DIR = Path(__file__).resolve().parent.parent


def _default_data_dir() -> Path:
    """Inside the checkout when run from one (git-ignored `var/`), else the XDG data home."""
    if (BASE_DIR / "manage.py").exists():
        return BASE_DIR / "var"
    return Path.home() / ".local" / "share" / "memhub"


MEMHUB_DATA_DIR = env_path("MEMHUB_DATA_DIR", _default_data_dir())
try:
    MEMHUB_DATA_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(
        f"MEMHUB_DATA_DIR={str(MEMHUB_DATA_DIR)!r} cannot be created ({exc.strerror}): use a "
        "directory memhub may write to"
    ) from None


def _secret_key() -> str:
    """An explicit key wins; else one generated on first start, kept (0600) in the data dir."""
    explicit = env_str("MEMHUB_SECRET_KEY")
    if explicit:
        return explicit
    path = MEMHUB_DATA_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        key = secrets.token_urlsafe(50)
        path.touch(mode=0o600)
        path.write_text(key)
        return key


SECRET_KEY = _secret_key()
DEBUG = env_bool("MEMHUB_DEBUG", False)

MEMHUB_BIND = env_bind("MEMHUB_BIND", "127.0.0.1:8000")
ALLOWED_HOSTS = env_hosts("MEMHUB_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
if MEMHUB_BIND[0] not in ("0.0.0.0", "::", "[::]") and MEMHUB_BIND[0] not in ALLOWED_HOSTS:
    ALLOWED_HOSTS.append(MEMHUB_BIND[0])
CSRF_TRUSTED_ORIGINS = env_origins("MEMHUB_CSRF_TRUSTED_ORIGINS")

# Discovery of the local user's agent memory (docs/design.md §1, §3).
MEMHUB_DISCOVER = env_bool("MEMHUB_DISCOVER", True)
MEMHUB_LOCAL_OWNER = env_str("MEMHUB_LOCAL_OWNER")

# Team sync (docs/design.md §17): the default remote is a bare repository inside the data dir.
# Empty means the embedded default: a bare repository `team-remote.git` in the data dir.
MEMHUB_TEAM_REMOTE = env_str("MEMHUB_TEAM_REMOTE")

# Recall (docs/design.md §7): without a key memhub recalls offline.
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = env_url("ANTHROPIC_BASE_URL")
MEMHUB_RECALL_MODEL = env_str("MEMHUB_RECALL_MODEL", "claude-sonnet-4-6")
# Seconds the LLM selector may take per attempt (one retry) before recall falls back offline.
MEMHUB_RECALL_TIMEOUT = env_float("MEMHUB_RECALL_TIMEOUT", 10.0, minimum=0.1)
# The longest one MCP request may take before the worker answers 504 (docs/design.md §27).
MEMHUB_MCP_TIMEOUT = env_float("MEMHUB_MCP_TIMEOUT", 60.0, minimum=1.0)

# Extraction (docs/design.md §14): the model that proposes memories from sessions, and how long
# one attempt may take (a failed attempt is tried once more).
MEMHUB_EXTRACTION_MODEL = env_str("MEMHUB_EXTRACTION_MODEL", "claude-sonnet-4-6")
MEMHUB_EXTRACTION_TIMEOUT = env_float("MEMHUB_EXTRACTION_TIMEOUT", 60.0, minimum=1.0)
# Consolidation and distillation (docs/design.md §14.7): one call each, larger than extraction's.
MEMHUB_CONSOLIDATION_MODEL = env_str("MEMHUB_CONSOLIDATION_MODEL", "claude-sonnet-4-6")
MEMHUB_CONSOLIDATION_TIMEOUT = env_float("MEMHUB_CONSOLIDATION_TIMEOUT", 180.0, minimum=1.0)
# Session transcripts older than this many days are pruned (daily); 0 keeps them.
MEMHUB_TRANSCRIPT_RETENTION_DAYS = env_int("MEMHUB_TRANSCRIPT_RETENTION_DAYS", 30, minimum=0)

MEMHUB_STALE_DAYS = env_int("MEMHUB_STALE_DAYS", 30, minimum=1)
# Events older than this many days are pruned (daily by the sync worker, or `prune_events`);
# 0 keeps them all.
MEMHUB_EVENT_RETENTION_DAYS = env_int("MEMHUB_EVENT_RETENTION_DAYS", 90, minimum=0)
# Forgotten memories stay restorable this many days, then go with their history.
MEMHUB_TRASH_DAYS = env_int("MEMHUB_TRASH_DAYS", 30, minimum=1)

# Joining (docs/design.md §26): how long API tokens and invitations live, and where mail goes.
# A token lives this many days, then is renewed on the API tokens page; 0: tokens never expire.
MEMHUB_TOKEN_DAYS = env_int("MEMHUB_TOKEN_DAYS", 90, minimum=0)
MEMHUB_INVITATION_DAYS = env_int("MEMHUB_INVITATION_DAYS", 7, minimum=1)
# The command the Connect your agent page gives for installing memhub-agent; unset: pipx from
# the site's own package index (`/client/simple/`, docs/design.md §26).
MEMHUB_CLIENT_INSTALL = env_str("MEMHUB_CLIENT_INSTALL")
# Single sign-on with OpenID Connect (docs/design.md §26): on when an issuer is set. Its
# endpoints come from the issuer's discovery document, read when first needed.
MEMHUB_OIDC_ISSUER = env_str("MEMHUB_OIDC_ISSUER").rstrip("/")
MEMHUB_OIDC_CLIENT_ID = env_str("MEMHUB_OIDC_CLIENT_ID")
MEMHUB_OIDC_CLIENT_SECRET = env_str("MEMHUB_OIDC_CLIENT_SECRET")
MEMHUB_OIDC_ALLOWED_DOMAINS = [
    d.strip().lower() for d in env_str("MEMHUB_OIDC_ALLOWED_DOMAINS").split(",") if d.strip()
]
MEMHUB_OIDC_STAFF_GROUP = env_str("MEMHUB_OIDC_STAFF_GROUP")
# The userinfo claim holding the person's groups or roles; dots reach into objects.
MEMHUB_OIDC_STAFF_CLAIM = env_str("MEMHUB_OIDC_STAFF_CLAIM", "groups")
MEMHUB_PASSWORD_LOGIN = env_bool("MEMHUB_PASSWORD_LOGIN", True)
if MEMHUB_OIDC_ISSUER and not MEMHUB_OIDC_CLIENT_ID:
    raise ImproperlyConfigured("MEMHUB_OIDC_ISSUER is set: set MEMHUB_OIDC_CLIENT_ID too.")
if not MEMHUB_PASSWORD_LOGIN and not MEMHUB_OIDC_ISSUER:
    raise ImproperlyConfigured("MEMHUB_PASSWORD_LOGIN=0 needs single sign-on (MEMHUB_OIDC_ISSUER).")
# Who may sign in how, the one list of them: the login throttle first, as axes asks (it only
# refuses, docs/design.md §25), single sign-on when it is on, and passwords unless
# MEMHUB_PASSWORD_LOGIN=0, on every login page, the admin's included.
AUTHENTICATION_BACKENDS = [
    "memapp.web.login_throttle.LoginThrottleBackend",
    *(["memapp.web.sso.SSOBackend"] if MEMHUB_OIDC_ISSUER else []),
    *(["django.contrib.auth.backends.ModelBackend"] if MEMHUB_PASSWORD_LOGIN else []),
]
# mozilla-django-oidc's own settings: authorization code with PKCE, RS256 id tokens.
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATION_CALLBACK_URL = "sso_callback"
# Seconds `memhub-agent login` waits between polls while a person approves it (RFC 8628).
MEMHUB_DEVICE_POLL_SECONDS = env_int("MEMHUB_DEVICE_POLL_SECONDS", 5, minimum=1)
# Invitations are mailed through Django's email backend: printed on the console unless an SMTP
# host is set.
EMAIL_HOST = env_str("MEMHUB_EMAIL_HOST")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = env_int("MEMHUB_EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("MEMHUB_EMAIL_USER")
EMAIL_HOST_PASSWORD = env_str("MEMHUB_EMAIL_PASSWORD")
EMAIL_USE_TLS = env_bool("MEMHUB_EMAIL_TLS", True)
# Seconds the mail server may take: a person waits on the People page while it answers.
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env_str("MEMHUB_EMAIL_FROM", "memhub <memhub@localhost>")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_tasks",
    "django_tasks_db",
    "memapp",
    "memapp.stores",
    "memapp.web",
    "teamsync",
    "snapshots",
    "memapp.lifecycle",
    "axes",
]

MIDDLEWARE = [
    "memapp.stores.warm.warm_requests",
    "memapp.api.middleware.api_body_limit",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memapp.web.middleware.security_headers",
    "memapp.web.middleware.upload_limit",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as axes asks: it turns a refused login into the page that says how long to wait.
    "axes.middleware.AxesMiddleware",
]
# What an agent's usual recall and prompt (memapp.api.plain_views) skip when they carry no
# cookie (memapp.wsgi): each serves a browser (static files, form uploads, its session, CSRF,
# signed-in user, messages, htmx, login lockouts) and changes nothing in those answers, as
# tests/api/test_api_handler.py shows. A middleware added above passes them too unless it is
# named here.
PAGE_MIDDLEWARE = frozenset(
    {
        "whitenoise.middleware.WhiteNoiseMiddleware",
        "memapp.web.middleware.upload_limit",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
        "django_htmx.middleware.HtmxMiddleware",
        "axes.middleware.AxesMiddleware",
    }
)

ROOT_URLCONF = "memapp.urls"
CSRF_FAILURE_VIEW = "memapp.web.views.errors.csrf_failure"
WSGI_APPLICATION = "memapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memapp.web.context_processors.waiting",
            ],
        },
    },
]

_SQLITE_DEFAULT = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": MEMHUB_DATA_DIR / "memhub.sqlite3",
}
# One connection per worker, not per request (a new PostgreSQL connection costs milliseconds),
# checked before reuse so a restarted database server costs one failed request, not many.
DATABASES = {
    "default": env_database("DATABASE_URL", conn_max_age=60, conn_health_checks=True)
    or _SQLITE_DEFAULT
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed during a write; IMMEDIATE avoids "database is locked" upgrades.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # Tests get a file too (not SQLite's shared-cache memory database, whose table locks fail
    # at once where the file's WAL lets a reader and a writer in different threads proceed).
    DATABASES["default"]["TEST"] = {"NAME": str(MEMHUB_DATA_DIR / "test-memhub.sqlite3")}
DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Shared state of the API (throttles, each session's recall budget and surfaced memories) lives
# in Django's cache: by default a table in the database, so every server worker (and every
# machine that shares the database) sees the same counts. docs/scaling.md says when to use Redis.
MEMHUB_CACHE_URL = env_str("MEMHUB_CACHE_URL", "db://")
CACHES = {"default": env_cache("MEMHUB_CACHE_URL", "db://")}

# Background jobs (team push and pull, pruning, extraction …) are Django tasks. The embedded
# default keeps them in the database and `manage.py serve` starts the worker that runs them.
TASKS = {"default": env_tasks("MEMHUB_TASKS", "database")}
if TASKS["default"]["BACKEND"] == "django_tasks_rq.RQBackend":
    MEMHUB_RQ_URL = env_redis_url("MEMHUB_RQ_URL")
    if not MEMHUB_RQ_URL:
        raise ImproperlyConfigured("MEMHUB_TASKS=rq needs MEMHUB_RQ_URL (e.g. redis://host:6379/0)")
    INSTALLED_APPS += ["django_rq", "django_tasks_rq"]
    RQ_QUEUES = {"default": {"URL": MEMHUB_RQ_URL}}
# Seconds between fallback rescans of every store (the watcher catches changes within a second
# or two; this catches what it cannot see: network file systems, a base that appeared later).
MEMHUB_RESCAN_SECONDS = env_int("MEMHUB_RESCAN_SECONDS", 60, minimum=5)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login throttling (django-axes, docs/design.md §25): MEMHUB_LOGIN_FAILURES failed logins for
# one username or from one address, then a wait of MEMHUB_LOGIN_LOCKOUT_MINUTES (each further
# try restarts it). Staff unlock from the admin's "Access attempts" or `manage.py axes_reset`.
# Its backend is in AUTHENTICATION_BACKENDS above.
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = env_int("MEMHUB_LOGIN_FAILURES", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("MEMHUB_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = "memapp.web.login_throttle.lockout_parameters"
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "memapp.web.login_throttle.client_address"
AXES_LOCKOUT_CALLABLE = "memapp.web.login_throttle.locked_out"
# Failures are kept (to count them); successful logins are not logged, so no table grows with
# every login.
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False  # its start-up banner would land in every command's output
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the source folders: no collectstatic step for a one-command start.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Agent API bodies up to 5 MB (docs/design.md §15).
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

MEMHUB_API_RATE = env_rate("MEMHUB_API_RATE", "1200/min")
# Browser logins (`memhub-agent login` without a token) started per address.
MEMHUB_DEVICE_RATE = env_rate("MEMHUB_DEVICE_RATE", "30/hour")
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memapp.api.auth.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["memapp.api.auth.TokenScopePermission"],
    "DEFAULT_THROTTLE_CLASSES": ["memapp.api.auth.TokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"token": MEMHUB_API_RATE, "device": MEMHUB_DEVICE_RATE},
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memapp.api.parsers.BoundedJSONParser"],
    "EXCEPTION_HANDLER": "memapp.api.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "memhub agent API",
    "DESCRIPTION": "File sync, remember/forget, recall and prompt assembly for local agents.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get their own components, so the schema says which strings may not be blank.
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Redoc asks for Montserrat and Roboto by default: system fonts, so nothing is fetched.
    "REDOC_UI_SETTINGS": {
        "theme": {
            "typography": {
                "fontFamily": "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif",
                "headings": {"fontFamily": "system-ui, -apple-system, 'Segoe UI', sans-serif"},
                "code": {"fontFamily": "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"},
            }
        },
        "expandResponses": "200,201",
        "pathInMiddlePanel": True,
    },
    # `scope` takes several sets of values: a store's, recall's (which adds `both`), a
    # recalled memory's (which adds `agent`), and an agent memory's.
    "ENUM_NAME_OVERRIDES": {
        "StoreScopeEnum": "memapp.api.serializers.STORE_SCOPES",
        "RecallScopeEnum": "memapp.api.serializers.RECALL_SCOPES",
        "MemoryScopeEnum": "memapp.api.serializers.MEMORY_SCOPES",
        "AgentScopeEnum": "memapp.api.serializers.AGENT_SCOPES",
    },
}

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Behind a TLS proxy (docs/design.md §25): cookies sent over HTTPS only, HSTS, and the proxy's
# X-Forwarded-Proto and X-Forwarded-For believed. Trusting them is only safe when the proxy
# sets both (overwriting what a client sent) and memhub is reachable through it alone.
MEMHUB_SECURE_COOKIES = env_bool("MEMHUB_SECURE_COOKIES", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = MEMHUB_SECURE_COOKIES
# Django sends HSTS only on requests it sees as HTTPS: behind a proxy, with MEMHUB_TRUST_PROXY.
SECURE_HSTS_SECONDS = env_int("MEMHUB_HSTS_SECONDS", 0, minimum=0)
MEMHUB_TRUST_PROXY = env_bool("MEMHUB_TRUST_PROXY", False)
if MEMHUB_TRUST_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": FILTERS,  # Django logs the path of every 4xx answer, as sent
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["secrets"]}},
    "root": {"handlers": ["console"], "level": env_log_level("MEMHUB_LOG_LEVEL", "INFO")},
    # Django's own handlers (a console with MEMHUB_DEBUG, mail to ADMINS) would write its lines
    # unfiltered, and twice with DEBUG: its lines go to the root's handler alone.
    "loggers": {"django": {"handlers": [], "propagate": True}},
}
