"""The command line as a person meets it: --version, status, logout, help that shows how,
exit statuses by class, a timeout on a hanging server, one sentence for a server that is not
memhub, --json output, and the server's own words when it refuses a request."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memapp.client.commands import DEFAULT_TIMEOUT
from memapp.client.config import Config, save_config
from tests.client.conftest import topic

pytestmark = pytest.mark.django_db(transaction=True)

COMMANDS = [
    ["login"],
    ["status"],
    ["logout"],
    ["sync"],
    ["recall"],
    ["prompt"],
    ["search"],
    ["team", "sync"],
    ["snapshot", "push"],
    ["snapshot", "apply"],
    ["snapshot", "publish"],
    ["hook"],
]


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    machine_a.write("MEMORY.md", "- [Real DB](feedback_db.md) — no mocks\n")
    machine_a.write("feedback_db.md", topic("Real DB", "Integration tests hit a real database"))
    machine_a.sync()
    return machine_a


@pytest.fixture
def html_server():
    """Not memhub: a web server that answers every request with a welcome page."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            page = b"<!doctype html><title>Welcome to nginx!</title><h1>It works</h1>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_version(machine_a):
    result = machine_a.run("--version")

    assert (result.returncode, result.stdout) == (0, "memhub-agent 0.1.0\n")


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_explains_itself_with_examples_and_its_environment(machine_a, command):
    result = machine_a.run(*command, "--help")

    assert result.returncode == 0, result.stderr
    description, _, rest = result.stdout.partition("examples:")
    assert len(description.split("options:")[0].split("\n\n", 1)[-1]) > 60  # a real description
    examples, _, rest = rest.partition("environment:")
    assert f"memhub-agent {' '.join(command)}" in examples
    assert "MEMHUB_" in rest or "CLAUDE_" in rest
    assert "exit status:" in rest and "4  server unreachable" in rest


def test_the_main_help_lists_the_exit_statuses(machine_a):
    result = machine_a.run("--help")

    for line in (
        "0  success",
        "1  finished, with conflicts or skipped files",
        "2  usage",
        "3  authentication",
        "4  server unreachable, timed out, or not a memhub server",
        "5  server error",
    ):
        assert line in result.stdout


def test_each_group_adds_the_commands_the_table_names_and_a_typo_lists_them_all(machine_a):
    """`COMMANDS` says which module adds which command, so a command imports only its own
    group: a command added to a group and not to the table would be unknown."""
    import argparse
    import importlib

    from memapp.client.cli import COMMANDS

    for entry, names in COMMANDS.items():
        commands = argparse.ArgumentParser().add_subparsers()
        module, function = entry.split(":")
        getattr(importlib.import_module(module), function)(commands)
        assert tuple(commands.choices) == names, entry
    unknown = machine_a.run("frobnicate").stderr
    assert "invalid choice" in unknown
    listed = unknown.split("choose from", 1)[1]
    for names in COMMANDS.values():
        for name in names:
            assert name in listed, name


def test_a_usage_error_exits_2(machine_a):
    assert machine_a.run("recall").returncode == 2
    assert machine_a.run("frobnicate").returncode == 2


@pytest.mark.parametrize("command", [["recall", "build"], ["prompt"]])
def test_an_agent_type_that_is_no_directory_name_is_a_usage_error(machine_a, command):
    machine_a.extra_env.update(MEMHUB_URL="http://127.0.0.1:9", MEMHUB_TOKEN="mh_x")
    result = machine_a.run(*command, "--agent", "../../etc")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "memhub-agent: agent type '../../etc' is not a single path segment"
    ]


@pytest.mark.parametrize("command", [["sync"], ["recall", "build"], ["status"]])
def test_a_cwd_that_does_not_exist_is_a_usage_error(machine_a, command, tmp_path):
    """A mistyped --cwd named a project no one has, and the server made it."""
    machine_a.extra_env.update(MEMHUB_URL="http://127.0.0.1:9", MEMHUB_TOKEN="mh_x")
    result = machine_a.run(*command, "--cwd", str(tmp_path / "nonexistent"))
    assert result.returncode == 2
    assert f"{tmp_path / 'nonexistent'}: no such directory" in result.stderr


def test_status_names_the_server_user_project_store_and_last_sync(a, server):
    result = a.run("status")

    assert result.returncode == 0, result.stderr
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines())
    assert lines["server"].strip() == f"{server.url} (memhub 0.1.0)"
    assert lines["user"].strip().startswith("alice (token 'laptop', mh_")
    assert lines["project"].strip().startswith("acme/widgets (")
    assert lines["memory dir"].strip() == f"{a.memory_dir} (2 files)"
    assert lines["store"].strip().startswith("private store ")
    assert lines["store"].strip().endswith("(1 files)")
    assert lines["last sync"].strip().endswith("(just now)")

    status = json.loads(a.run("status", "--json").stdout)
    assert status["user"] == "alice" and status["local_files"] == 2
    assert status["store"]["files"] == 1 and status["last_sync"]


def test_status_before_the_first_sync(machine_a, server):
    machine_a.login(server)

    result = machine_a.run("status")

    assert result.returncode == 0, result.stderr
    assert "none on the server yet: `memhub-agent sync` creates it" in result.stdout
    assert "never from this machine" in result.stdout


def test_status_says_how_to_log_in(machine_a):
    result = machine_a.run("status")

    assert result.returncode == 3
    assert "memhub-agent login" in result.stderr


def test_logout_revokes_the_token_and_forgets_the_login(a, machine_b, server):
    result = a.run("logout")

    assert result.returncode == 0, result.stderr
    assert f"logged out of {server.url}" in result.stdout
    assert "the token was revoked on the server" in result.stdout
    assert not (a.config_dir / "agent.json").exists()
    machine_b.extra_env.update(MEMHUB_URL=server.url, MEMHUB_TOKEN=server.token)
    refused = machine_b.run("status")
    assert refused.returncode == 3
    assert "Invalid or revoked token" in refused.stderr


def test_logout_with_the_server_down_still_forgets_the_login(machine_a, closed_port):
    save_config(Config(f"http://127.0.0.1:{closed_port}", "mh_x"), machine_a.env)

    result = machine_a.run("logout", "--timeout", "2")

    assert result.returncode == 0
    assert not (machine_a.config_dir / "agent.json").exists()
    assert "the token was NOT revoked" in result.stderr
    assert "API tokens page" in result.stderr


def test_the_default_timeout_is_sane():
    assert 5 <= DEFAULT_TIMEOUT <= 30


@pytest.mark.parametrize(
    "command", [["recall", "why?"], ["sync"], ["prompt"], ["status"], ["search", "deploy"]]
)
def test_a_hanging_server_is_given_up_on_with_a_sentence(machine_a, silent_server, command):
    machine_a.extra_env.update(MEMHUB_URL=silent_server, MEMHUB_TOKEN="mh_x")
    started = time.monotonic()

    result = machine_a.run(*command, "--timeout", "1")

    assert time.monotonic() - started < 5
    assert result.returncode == 4
    [line] = result.stderr.splitlines()
    assert line.startswith(f"memhub-agent: cannot reach {silent_server}: timed out")


@pytest.mark.parametrize("command", [["recall", "why?"], ["sync"], ["status"], ["search", "x"]])
def test_a_server_that_is_not_memhub_gets_one_sentence(machine_a, html_server, command):
    machine_a.extra_env.update(MEMHUB_URL=html_server, MEMHUB_TOKEN="mh_x")

    result = machine_a.run(*command)

    assert result.returncode == 4
    [line] = result.stderr.splitlines()
    assert line.startswith(f"memhub-agent: {html_server} does not look like a memhub server: ")
    assert "answered HTTP 200 with an HTML page" in line
    assert "<" not in line


@pytest.fixture
def json_answers():
    """Not memhub either: another JSON API (or a proxy, or a changed server), which answers
    every request with the same JSON; `json_answers(body)` starts one and gives its URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(body: bytes, status: int = 200) -> str:
        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args) -> None:
                pass

        servers.append(ThreadingHTTPServer(("127.0.0.1", 0), Handler))
        threading.Thread(target=servers[-1].serve_forever, args=(0.05,), daemon=True).start()
        return f"http://127.0.0.1:{servers[-1].server_address[1]}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def json_server(json_answers):
    return json_answers(b'{"status": "ok"}')


@pytest.mark.parametrize("kind", ["html", "json"])
def test_login_to_something_that_is_not_memhub_is_refused_in_a_sentence(machine_a, request, kind):
    """A JSON answer without memhub's shape was taken as a login with 0 stores visible."""
    result = machine_a.run("login", request.getfixturevalue(f"{kind}_server"), "--token", "mh_x")

    assert result.returncode == 4
    assert "does not look like a memhub server" in result.stderr
    assert not (machine_a.config_dir / "agent.json").exists()


def not_memhub(result, url: str) -> str:
    """The one sentence a command said of an answer that is not memhub's (exit 4, no
    traceback)."""
    assert result.returncode == 4, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"memhub-agent: {url} does not look like a memhub server: ")
    return line


@pytest.mark.parametrize("body", [b"{}", b'{"ok": true}'])
@pytest.mark.parametrize(
    ("command", "path", "field"),
    [
        (["status"], "/api/v1/me", "username"),
        (["sync"], "/api/v1/stores/resolve", "id"),
        (["sync", "--dry-run"], "/api/v1/stores/resolve", "id"),
        (["consolidate"], "/api/v1/stores/resolve", "id"),
    ],
)
def test_a_json_answer_without_memhubs_fields_gets_one_sentence(
    machine_a, json_answers, body, command, path, field
):
    """A KeyError's traceback before: the field missing is named, with the server."""
    url = json_answers(body)
    machine_a.extra_env.update(MEMHUB_URL=url, MEMHUB_TOKEN="mh_x")

    line = not_memhub(machine_a.run(*command), url)

    assert line.endswith(f"{path} answered JSON without {field!r} (check the URL)")


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["status"], "/api/v1/me answered 'token' as a string where memhub sends an object"),
        (
            ["sync"],
            "/api/v1/stores/resolve answered 'id' as a string where memhub sends an integer",
        ),
    ],
)
def test_a_json_answer_with_fields_of_other_types_gets_one_sentence(
    machine_a, json_answers, command, said
):
    """`int()` of the store id was a ValueError's traceback, a string token a TypeError's."""
    url = json_answers(b'{"id": "x", "username": "u", "token": "t", "version": "1"}')
    machine_a.extra_env.update(MEMHUB_URL=url, MEMHUB_TOKEN="mh_x")

    assert said in not_memhub(machine_a.run(*command), url)


def test_a_json_answer_that_is_no_object_gets_one_sentence(machine_a, json_answers):
    url = json_answers(b"[]")
    machine_a.extra_env.update(MEMHUB_URL=url, MEMHUB_TOKEN="mh_x")

    line = not_memhub(machine_a.run("recall", "why?"), url)

    assert "/api/v1/recall answered JSON that is a list, not an object" in line


def test_doctor_fails_its_server_check_on_a_json_answer_that_is_not_memhubs(
    machine_a, json_answers
):
    """A KeyError's traceback before. Like any server that is not memhub, it is a failed
    check with its fix, and the exit status is doctor's 1 (README: "each failure with its fix
    (exit 1)")."""
    url = json_answers(b"{}")
    machine_a.extra_env.update(MEMHUB_URL=url, MEMHUB_TOKEN="mh_x")

    result = machine_a.run("doctor")

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert (
        f"FAIL server: {url} does not look like a memhub server: /api/v1/me answered JSON "
        "without 'username' (check the URL)\n     fix: log in with memhub's own URL"
    ) in result.stdout


def test_log_keeps_the_entry_here_when_the_answer_is_not_memhubs(machine_a, json_answers):
    """As when memhub cannot be reached: nothing says the entry was logged anywhere."""
    machine_a.extra_env.update(MEMHUB_URL=json_answers(b"{}"), MEMHUB_TOKEN="mh_x")

    result = machine_a.run("log", "Deploys go out on Fridays")

    assert result.returncode == 0, result.stderr
    assert "does not look like a memhub server" in result.stderr
    [(key, text)] = machine_a.files().items()
    assert key.startswith("logs/") and "Deploys go out on Fridays" in text


def test_the_servers_error_detail_is_shown(a):
    result = a.run("recall", "")

    assert result.returncode == 2
    assert result.stderr.strip() == (
        "memhub-agent: the server refused the request: The request is not valid. "
        "(query: This field may not be blank.) [invalid, HTTP 400]"
    )


def test_sync_json(a):
    a.write("feedback_ci.md", topic("CI", "CI runs on every push"))

    dry = json.loads(a.run("sync", "--dry-run", "--json").stdout)
    result = a.run("sync", "--json")

    assert dry["dry_run"] is True
    assert dry["planned"] == [{"action": "upload", "key": "feedback_ci.md", "conflict": None}]
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["uploaded"] == ["feedback_ci.md"]
    assert report["conflicts"] == [] and report["skipped"] == [] and report["errors"] == []


def test_a_failure_with_json_is_json_too(machine_a, closed_port):
    machine_a.extra_env.update(MEMHUB_URL=f"http://127.0.0.1:{closed_port}", MEMHUB_TOKEN="mh_x")

    result = machine_a.run("recall", "why?", "--json", "--timeout", "2")

    assert result.returncode == 4
    error = json.loads(result.stdout)["error"]
    assert error["class"] == "unreachable" and error["exit_status"] == 4
    assert error["message"].startswith("cannot reach ")


def test_recall_and_search_json(a):
    recalled = json.loads(a.run("recall", "real database in integration tests", "--json").stdout)
    found = a.run("search", "database", "--json")

    assert [m["path"] for m in recalled["memories"]] == [str(a.memory_dir / "feedback_db.md")]
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)["memories"]] == ["feedback_db.md"]


def test_searching_nothing_says_why_in_the_servers_words(a):
    result = a.run("search", " ")

    assert result.returncode == 2
    assert result.stderr.startswith("memhub-agent: the server refused the request: ")


def test_doctor_says_a_proxy_answered_for_memhub(machine_a, json_answers):
    """nginx's 502 while memhub behind it is stopped: the URL is right, the fix is not another
    URL."""
    url = json_answers(b'{"message": "no upstream"}', status=502)
    machine_a.extra_env.update(MEMHUB_URL=url, MEMHUB_TOKEN="mh_x")

    result = machine_a.run("doctor")

    assert result.returncode == 1
    assert "from something in front of memhub" in result.stdout
    assert "fix: start memhub behind the proxy, or ask whoever runs it" in result.stdout
