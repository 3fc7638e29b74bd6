"""The install command on Connect your agent works against the site alone (docs/design.md §26):
the site serves memhub-agent and what it needs as a package index of its own, and a fresh
virtual environment installs from it with no other index and runs `memhub-agent`."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest

pytestmark = pytest.mark.django_db


def test_connect_gives_the_sites_own_index_by_default_and_the_setting_overrides(
    client, bob, settings
):
    client.force_login(bob)
    command = "pipx install --index-url http://testserver/client/simple/ memhub-agent"
    assert command in client.get("/connect/").content.decode()
    settings.MEMHUB_CLIENT_INSTALL = "uv tool install memhub-agent"
    assert "uv tool install memhub-agent" in client.get("/connect/").content.decode()


def test_a_fresh_environment_installs_the_client_from_the_site_alone(live_server, tmp_path):
    index = f"{live_server.url}/client/simple/"
    listing = urllib.request.urlopen(index).read().decode()
    for name in ("memhub-agent", "pyyaml", "detect-secrets", "requests"):
        assert f">{name}</a>" in listing
    venv = tmp_path / "fresh"
    # No pip of its own (ensurepip alone takes seconds): this test's pip installs into it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env.pop("PIP_INDEX_URL", None)
    env.pop("PIP_EXTRA_INDEX_URL", None)
    install = subprocess.run(
        [*pip, "install", "--no-cache-dir", "--index-url", index, "memhub-agent"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    assert "pypi.org" not in install.stdout + install.stderr
    run = subprocess.run(
        [str(venv / "bin" / "memhub-agent"), "--help"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    assert "memhub-agent" in run.stdout and "login" in run.stdout
    # The client is the one this server runs, without the server: no Django came with it.
    freeze = subprocess.run([*pip, "freeze"], capture_output=True, text=True, env=env)
    assert "Django" not in freeze.stdout and "memhub-agent" in freeze.stdout
