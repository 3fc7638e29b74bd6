"""Shared fixtures: named users (alice owns, bob is a teammate, charlie an outsider, sam is
staff), memory directories in temp dirs, and Debian's Chromium (its headless shell) for the
browser tests."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API in tests

# Chromium's headless shell (Debian's chromium-headless-shell; Playwright's default build when
# headless): the same Blink and V8 as the full browser, without its UI. The full browser took
# 60 % more CPU for tests/browser (513 s against 320 s: a WebUI renderer of its own, twice as
# many renderers, a browser process three times as busy).
CHROMIUM = "/usr/lib/chromium/chromium-headless-shell"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "correct horse battery staple"


def pytest_configure(config):
    """Passwords hashed the fast way: the default (a million PBKDF2 rounds) takes a quarter of
    a second per user, and most tests create three or four. No test is about the hashing."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection():
    """Collection imports every test module and builds 3,000 items that live through the run:
    the cyclic garbage collector's passes over them were a third of a worker's collection
    (15.5 s of CPU, 9.8 s without them). Frozen, the run's collections never walk them."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()


TESTS = Path(__file__).resolve().parent
CLIENT_TESTS = TESTS / "client"
# Team sync's git work end to end (commits, pushes, secrets kept back, conflicts, another
# machine): the database records its outcome, and those rows (conflicts, blocked files,
# versions, events) are written by syncs and read again on PostgreSQL in test_views,
# test_told, test_history and test_pull_mirror. A sixth of the PostgreSQL run's CPU. The held
# deletions' tests stay: only they run the conditional update that decides them.
GIT_WORK_TESTS = {TESTS / "teamsync" / name for name in ("test_service.py", "test_two_machines.py")}
DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_reset_sequences"}


def pytest_collection_modifyitems(config, items):
    """With MEMHUB_TEST_DATABASE_ONLY=1 (the PostgreSQL run of scripts/test) only the tests
    that touch the database run, minus those that drive a live server through a browser and
    the client's (`tests/client/`, which run `memhub-agent` processes against a server, a fake
    or none): they test pages and the client, and the views and queries behind them run
    in-process in the web, API and protocol tests, which do run on PostgreSQL. Team sync's
    git work end to end (GIT_WORK_TESTS) stays on SQLite too."""
    if os.environ.get("MEMHUB_TEST_DATABASE_ONLY") != "1":
        return
    keep, drop = [], []
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        uses_db = DATABASE_FIXTURES & fixtures
        left_to_sqlite = (
            "live_server" in fixtures
            or item.get_closest_marker("browser")
            or item.path.is_relative_to(CLIENT_TESTS)
            or item.path in GIT_WORK_TESTS
        )
        if (uses_db or item.get_closest_marker("django_db")) and not left_to_sqlite:
            keep.append(item)
        else:
            drop.append(item)
    items[:] = keep
    config.hook.pytest_deselected(items=drop)


def pytest_unconfigure(config):
    """Events a live server buffered during the last tests refer to rows that are gone now."""
    from memapp.stores.events import discard_buffered_events
    from memapp.stores.recall_stats import discard_recall_counts

    discard_buffered_events()
    discard_recall_counts()


KEPT_BY_FLUSH = {"django_content_type", "auth_permission"}


@pytest.fixture(scope="session", autouse=True)
def flush_keeps_content_types():
    """A test that commits ends with Django's flush of every table, after which the post_migrate
    signal writes the content types and permissions again: a hundred queries, 0.1 s on SQLite
    and 0.25 s on PostgreSQL for each of 400 tests. Only migrations write those two tables, so
    the flush keeps them and sends no signal: the next test starts from the same rows."""
    from django.core.management.commands import flush

    def sql_flush(style, connection, reset_sequences=True, allow_cascade=False):
        tables = connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        emptied = [table for table in tables if table not in KEPT_BY_FLUSH]
        if connection.vendor == "postgresql" and not reset_sequences:
            # A DELETE per table, in the flush's one transaction: Django's foreign keys are
            # checked at its commit, when every row is gone. PostgreSQL's TRUNCATE gives each
            # table new files: 85-95 ms for the 46 tables, against 5-19 ms for the DELETEs.
            quote = connection.ops.quote_name
            return [f"DELETE FROM {quote(table)};" for table in emptied]
        return connection.ops.sql_flush(
            style, emptied, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flush, "sql_flush", sql_flush)
        patch.setattr(flush, "emit_post_migrate_signal", lambda *args, **kwargs: None)
        yield


@pytest.fixture(scope="session", autouse=True)
def static_files_listed_once():
    """Django's test client loads the middleware again for each client, and WhiteNoise lists
    and stats the 219 static files each time: about 20 ms, nearly all of a load, and tests/web
    alone makes 242 clients. The files and the settings that shape their headers stay the
    same through a run, so the first list serves every later client."""
    from whitenoise.middleware import WhiteNoiseMiddleware

    listed: dict[tuple, dict] = {}
    list_files = WhiteNoiseMiddleware.add_files_from_finders

    def add_files_from_finders(self):
        key = (self.static_prefix, self.max_age, self.charset, self.allow_all_origins)
        if key not in listed:
            list_files(self)
            listed[key] = dict(self.files)
        self.files.update(listed[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WhiteNoiseMiddleware, "add_files_from_finders", add_files_from_finders)
        yield


@pytest.fixture(scope="session", autouse=True)
def live_server_says_why_it_did_not_answer():
    """A live server (Django's development server) that closes a connection without an
    answer says nothing: wsgiref drops a BrokenPipeError or ConnectionResetError raised
    anywhere in the request quietly. Twice in a full run, under load, a client of a live
    server got no answer; this prints the request and what was raised to the test's stderr."""
    import sys
    import traceback

    from django.core.servers.basehttp import ServerHandler, WSGIRequestHandler, WSGIServer

    run, send_headers = ServerHandler.run, ServerHandler.send_headers
    handle_one_request = WSGIRequestHandler.handle_one_request
    handle_error = WSGIServer.handle_error

    def run_and_say(self, application):
        def answered(environ, start_response):
            try:
                return application(environ, start_response)
            except (BrokenPipeError, ConnectionError):
                traceback.print_exc(file=sys.stderr)
                raise

        self.answered = False
        try:
            return run(self, answered)
        finally:
            if not self.answered:
                request = getattr(self.request_handler, "requestline", "?")
                print(f"live server: no answer to {request!r}", file=sys.stderr)

    def send_and_note(self):
        self.answered = True
        return send_headers(self)

    def handle_and_say(self):
        first = not getattr(self, "handled", False)
        self.handled = True
        handle_one_request(self)
        if first and not self.raw_requestline:
            where = self.client_address
            print(f"live server: no request on a new connection from {where}", file=sys.stderr)

    def say_error(self, request, client_address):
        # Django logs a reset or a broken pipe at INFO to a handler the tests never show.
        print(f"live server: error on the connection from {client_address}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return handle_error(self, request, client_address)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WSGIServer, "handle_error", say_error)
        patch.setattr(ServerHandler, "run", run_and_say)
        patch.setattr(ServerHandler, "send_headers", send_and_note)
        patch.setattr(WSGIRequestHandler, "handle_one_request", handle_and_say)
        yield


@pytest.fixture(autouse=True)
def no_buffered_events():
    """Events and recall counts buffered by one test never reach another test's database."""
    yield
    from memapp.stores.events import discard_buffered_events
    from memapp.stores.recall_stats import discard_recall_counts

    discard_buffered_events()
    discard_recall_counts()


@pytest.fixture(autouse=True)
def fresh_cache(request):
    """The shared cache (a database table, as in production) starts empty: a test's own rows
    go with its transaction, and a test that commits starts by clearing what others left."""
    marker = request.node.get_closest_marker("django_db")
    commits = marker is not None and marker.kwargs.get("transaction")
    if commits or {"transactional_db", "live_server"} & set(request.fixturenames):
        from django.core.cache import cache

        request.getfixturevalue("transactional_db")
        cache.clear()


@pytest.fixture(autouse=True)
def data_dir(tmp_path_factory):
    """Each test gets its own memhub data dir (managed stores, locks), outside its tmp_path.

    Django's override_settings, not the `settings` fixture, which a test parameter may shadow.
    """
    from django.test import override_settings

    path = tmp_path_factory.mktemp("memhub-data")
    with override_settings(MEMHUB_DATA_DIR=path):
        yield path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


def _user(django_user_model, username: str, **extra):
    return django_user_model.objects.create_user(username=username, password=PASSWORD, **extra)


@pytest.fixture
def alice(django_user_model):
    """The admin who runs memhub on her machine: the local owner of discovered directories."""
    return django_user_model.objects.create_superuser(username="alice", password=PASSWORD)


@pytest.fixture
def bob(django_user_model):
    return _user(django_user_model, "bob")


@pytest.fixture
def charlie(django_user_model):
    return _user(django_user_model, "charlie")


@pytest.fixture
def sam(django_user_model):
    return _user(django_user_model, "sam", is_staff=True)


def kept_after_leaving(user, project_key: str):
    """`user`'s private store of the project, made while a member and kept after they were
    removed: memhub makes no store for a non-member, but keeps the one they had."""
    from memapp.stores.projects import find_project, resolve_store

    project = find_project(project_key)
    project.members.add(user)
    store = resolve_store(user, project_key, "private")
    project.members.remove(user)
    return store


def write_memory(
    directory: Path, filename: str, name: str, description: str, type_: str, body: str = "Body.\n"
) -> Path:
    """A topic file in the format of docs/design.md §2."""
    path = directory / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n{body}",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def memory_base(tmp_path, monkeypatch):
    """A Claude Code memory base with one project (private + team) and one agent memory."""
    base = tmp_path / "claude"
    private = base / "projects" / "-home-alice-app" / "memory"
    write_memory(private, "user_role.md", "Role", "Alice is a backend engineer", "user")
    write_memory(private, "feedback_tests.md", "Real DB", "Tests hit a real database", "feedback")
    (private / "MEMORY.md").write_text(
        "- [Role](user_role.md) — who Alice is\n- [Real DB](feedback_tests.md) — no mocks\n"
    )
    team = private / "team"
    write_memory(team, "project_release.md", "Release", "Release freeze 2026-03-05", "project")
    (team / "MEMORY.md").write_text("- [Release](project_release.md) — freeze date\n")
    agent = base / "agent-memory" / "code-reviewer"
    write_memory(agent, "reference_style.md", "Style", "Style guide lives in docs/", "reference")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(base))
    monkeypatch.delenv("CLAUDE_CODE_REMOTE_MEMORY_DIR", raising=False)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))  # not the real one
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    return base


def background_tick() -> list:
    """One tick of the background clock (memapp.background), then the task worker runs, on
    the database backend, every task it enqueued: the return values of the tasks that ran."""
    from django.core.management import call_command
    from django_tasks_db.models import DBTaskResult

    from memapp.background import Clock

    before = set(DBTaskResult.objects.values_list("id", flat=True))
    Clock().tick()
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload")
    return [row.return_value for row in DBTaskResult.objects.exclude(id__in=before)]
