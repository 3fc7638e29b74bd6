"""`memhub-agent login`: the token is checked against the server and kept readable only by its
owner; environment variables override the file."""

from __future__ import annotations

import json
import subprocess

import pytest

from memapp.client.config import Config, config_dir, load_config, save_config
from memapp.stores.device_auth import do_approve_device, do_deny_device
from memapp.stores.tokens import authenticate_token
from tests.client.conftest import AGENT

pytestmark = pytest.mark.django_db(transaction=True)


def test_login_keeps_the_url_and_token_readable_only_by_the_owner(machine_a, server):
    result = machine_a.run("login", server.url + "/", "--token", server.token)

    assert result.returncode == 0, result.stderr
    assert server.url in result.stdout
    assert server.token not in result.stdout + result.stderr
    path = machine_a.config_dir / "agent.json"
    assert json.loads(path.read_text()) == {"url": server.url, "token": server.token}
    assert path.stat().st_mode & 0o777 == 0o600
    assert machine_a.config_dir.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in machine_a.config_dir.iterdir()] == ["agent.json"]  # no temp left


def test_login_reads_the_token_from_stdin(machine_a, server):
    result = machine_a.run("login", server.url, "--token", "-", stdin=server.token + "\n")

    assert result.returncode == 0, result.stderr
    saved = json.loads((machine_a.config_dir / "agent.json").read_text())
    assert saved["token"] == server.token


def test_login_refuses_a_token_the_server_refuses(machine_a, server):
    result = machine_a.run("login", server.url, "--token", "mh_wrong")

    assert result.returncode == 3
    assert "refused the token" in result.stderr
    assert not (machine_a.config_dir / "agent.json").exists()


def test_login_refuses_an_unreachable_server(machine_a, closed_port):
    result = machine_a.run("login", f"http://127.0.0.1:{closed_port}", "--token", "mh_x")

    assert result.returncode == 4
    assert "cannot reach" in result.stderr
    assert not (machine_a.config_dir / "agent.json").exists()


def test_login_refuses_something_that_is_not_a_server_url(machine_a):
    result = machine_a.run("login", "memhub.example", "--token", "mh_x")

    assert result.returncode == 2
    assert "not a server URL" in result.stderr


def test_a_new_login_replaces_the_old_one_and_tightens_the_dir(machine_a, server):
    machine_a.config_dir.mkdir(parents=True, mode=0o755)
    (machine_a.config_dir / "agent.json").write_text('{"url": "http://old.example", "token": "x"}')

    machine_a.login(server)

    assert json.loads((machine_a.config_dir / "agent.json").read_text())["url"] == server.url
    assert machine_a.config_dir.stat().st_mode & 0o777 == 0o700


def test_environment_variables_override_the_file(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    save_config(Config("https://memhub.example", "mh_file"), env)

    assert config_dir(env) == tmp_path / "xdg" / "memhub"
    assert load_config(env) == Config("https://memhub.example", "mh_file")
    assert load_config({**env, "MEMHUB_TOKEN": "mh_env"}) == Config(
        "https://memhub.example", "mh_env"
    )
    assert load_config({**env, "MEMHUB_URL": "http://127.0.0.1:9/"}) == Config(
        "http://127.0.0.1:9", "mh_file"
    )
    assert load_config({"HOME": str(tmp_path)}) is None  # ~/.config/memhub: nothing there
    assert load_config(
        {"HOME": str(tmp_path), "MEMHUB_URL": "https://m.example", "MEMHUB_TOKEN": "mh_e"}
    ) == Config("https://m.example", "mh_e")


def test_a_relative_xdg_config_home_is_ignored(tmp_path):
    assert config_dir({"HOME": str(tmp_path), "XDG_CONFIG_HOME": "rel"}) == (
        tmp_path / ".config" / "memhub"
    )


def _device_login(machine, server, settings):
    """`memhub-agent login URL` waiting in a subprocess, and the code it shows."""
    settings.MEMHUB_DEVICE_POLL_SECONDS = 1
    process = subprocess.Popen(
        [str(AGENT), "login", server.url, "--no-browser", "--name", "dana-laptop"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=machine.env,
        cwd=machine.checkout,
    )
    first = process.stdout.readline()
    assert f"open {server.url}/device/ and enter the code " in first, first
    return process, first.rsplit(" ", 1)[1].strip()


def test_login_without_a_token_waits_for_approval_in_the_browser(machine_a, server, settings, bob):
    process, code = _device_login(machine_a, server, settings)
    do_approve_device(code, bob)
    out, err = process.communicate(timeout=60)

    assert process.returncode == 0, err
    assert "logged in to" in out
    saved = json.loads((machine_a.config_dir / "agent.json").read_text())
    assert authenticate_token(saved["token"]).user == bob
    assert machine_a.run("status").returncode == 0


def test_a_denied_browser_login_stores_nothing(machine_a, server, settings, bob):
    process, code = _device_login(machine_a, server, settings)
    do_deny_device(code, bob)
    _, err = process.communicate(timeout=60)

    assert process.returncode == 3
    assert "denied" in err
    assert not (machine_a.config_dir / "agent.json").exists()
