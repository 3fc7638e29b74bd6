"""`memhub-agent doctor`: a line per check, each failure with its fix."""

from __future__ import annotations

import os

import pytest

from tests.client.conftest import AGENT

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_fresh_machine_is_told_to_log_in_and_install(machine_a):
    result = machine_a.run("doctor")
    assert result.returncode == 1
    assert "FAIL login: not logged in\n     fix: memhub-agent login URL --token -" in result.stdout
    assert (
        "FAIL claude-code hooks: 0 of 5 installed\n     fix: memhub-agent install claude-code"
        in (result.stdout)
    )
    assert "ok   project: acme/widgets" in result.stdout


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"url": "http://127.0.0.1:1", "tok', "cannot be read as memhub's login"),
        ('["http://127.0.0.1:1", "mh_x"]', "holds no login (a JSON object with url and token)"),
        ('{"url": "ftp://example", "token": "mh_x"}', "holds not a server URL: 'ftp://example'"),
    ],
)
def test_a_broken_login_file_is_named_with_what_is_wrong(machine_a, content, why):
    """Not a bare "not logged in": the person is told which file is broken and how."""
    path = machine_a.config_dir / "agent.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    doctor = machine_a.run("doctor")
    assert doctor.returncode == 1
    assert f"FAIL login: {path} {why}" in doctor.stdout
    status = machine_a.run("status")
    assert status.returncode == 3
    assert f"{path} {why}" in status.stderr and "log in again" in status.stderr


def test_a_set_up_machine_passes_every_check(machine_a, server):
    machine_a.extra_env["PATH"] = f"{AGENT.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    machine_a.login(server)
    machine_a.write("MEMORY.md", "")
    assert machine_a.run("install", "claude-code").returncode == 0
    result = machine_a.run("doctor")
    assert result.returncode == 0, result.stdout
    assert "FAIL" not in result.stdout
    assert f"ok   server: {server.url} is memhub" in result.stdout
    assert "ok   token: alice's token 'laptop' is valid" in result.stdout
    assert "ok   MCP answers: 5 tools at" in result.stdout


def test_a_refused_token_is_named_with_its_fix(machine_a, server):
    machine_a.extra_env.update(MEMHUB_URL=server.url, MEMHUB_TOKEN="mh_not_a_token")
    result = machine_a.run("doctor")
    assert result.returncode == 1
    assert f"ok   server: {server.url} is memhub" in result.stdout
    assert "FAIL token: Invalid or revoked token." in result.stdout
    assert f"fix: make a new token: memhub-agent login {server.url} --token -" in result.stdout


def test_every_agent_on_the_machine_is_checked(machine_a, server):
    machine_a.extra_env["PATH"] = f"{AGENT.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    machine_a.login(server)
    (machine_a.home / ".gemini").mkdir()  # Gemini CLI is here; Codex is not
    result = machine_a.run("doctor")
    assert "FAIL gemini-cli hooks: 0 of 4 installed\n     fix: memhub-agent install gemini-cli" in (
        result.stdout
    )
    assert "codex" not in result.stdout
    assert machine_a.run("install", "gemini-cli").returncode == 0
    assert "ok   gemini-cli hooks: 4 of 4 installed" in machine_a.run("doctor").stdout
