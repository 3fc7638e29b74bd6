"""The install command on Connect your agent works against the site alone (docs/design.md §26):
the site serves memhub-agent and what it needs as a package index of its own, and a fresh
virtual environment installs from it with no other index and runs `memhub-agent`."""

from __future__ import annotations

import ast
import http.client
import os
import subprocess
import sys
import urllib.request
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from memapp.web.client_package import CLIENT_PACKAGES, CLIENT_REQUIRES, normalize

pytestmark = pytest.mark.django_db


def test_connect_gives_the_sites_own_index_by_default_and_the_setting_overrides(
    client, bob, settings
):
    client.force_login(bob)
    command = "pipx install --index-url http://testserver/client/simple/ memhub-agent"
    assert command in client.get("/connect/").content.decode()
    settings.MEMHUB_CLIENT_INSTALL = "uv tool install memhub-agent"
    assert "uv tool install memhub-agent" in client.get("/connect/").content.decode()


def _listing(index: str) -> str:
    """The index page; once in fifteen full runs pytest-django's live server (Django's
    development server) closed this connection without an answer: it is asked once more,
    and that is said (tests/conftest.py's live server says its side)."""
    try:
        return urllib.request.urlopen(index).read().decode()
    except http.client.RemoteDisconnected:
        print(f"{index}: the live server closed the connection unanswered; asked again")
        return urllib.request.urlopen(index).read().decode()


def test_a_fresh_environment_installs_the_client_from_the_site_alone(live_server, tmp_path):
    index = f"{live_server.url}/client/simple/"
    listing = _listing(index)
    for name in ("memhub-agent", "pyyaml", "detect-secrets", "requests", "tqdm"):
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
    version = subprocess.run(
        [str(venv / "bin" / "memhub-agent"), "--version"], capture_output=True, text=True
    )
    assert version.stdout.strip() == "memhub-agent 0.1.0", version.stdout + version.stderr
    for module in ("yaml", "detect_secrets", "tqdm"):  # what `sync` and the hooks load
        imported = subprocess.run([str(venv / "bin" / "python"), "-c", f"import {module}"])
        assert imported.returncode == 0, module
    # The client is the one this server runs, without the server: no Django came with it.
    freeze = subprocess.run([*pip, "freeze"], capture_output=True, text=True, env=env)
    assert "Django" not in freeze.stdout and "memhub-agent" in freeze.stdout


def test_every_package_the_client_imports_is_a_requirement_of_its_wheel():
    """What the client's code imports outside the standard library comes with it: `sync`
    imported tqdm, which the wheel did not name, and failed where the site installed it."""
    root = Path(__file__).resolve().parents[2]
    imported: set[str] = set()
    for package in CLIENT_PACKAGES:
        for source in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(source.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.partition(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    imported.add(node.module.partition(".")[0])
    stdlib = set(sys.stdlib_module_names)
    outside = {m for m in imported - stdlib - {"memapp"} if not m.startswith("_")}  # _sha2 …
    distributions = packages_distributions()
    needed = {normalize(dist) for module in outside for dist in distributions[module]}
    server_only = {"numpy"}  # RecallIndex.scored_list: the server's store search alone
    assert needed - server_only <= {normalize(name) for name in CLIENT_REQUIRES}, outside
