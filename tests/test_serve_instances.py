"""Starting memhub as a person does: `serve --ensure-admin` ends with a box holding the address
and the admin's password, which logs the admin in (what the servers print goes to log files),
and two instances with their own data dirs and ports run side by side and stop cleanly, each
with its own logs."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from memapp.management.commands.serve import banner
from memapp.stores.first_admin import FirstAdmin
from tests.migrated import migrate
from tests.test_serve import MANAGE, _answers, free_port, stop_serve, wait_until


def start(
    data_dir: Path, home: Path, host: str = "127.0.0.1"
) -> tuple[subprocess.Popen, str, Path, dict]:
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "MEMHUB_DATA_DIR": str(data_dir),
        "CLAUDE_CONFIG_DIR": str(home / "claude"),
        "MEMHUB_BIND": f"{host}:{port}",
    }
    migrate(data_dir)
    home.mkdir(parents=True, exist_ok=True)
    out = home / f"serve-{port}.out"
    with out.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, MANAGE, "serve", "--workers", "1", "--ensure-admin"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: _answers(url) and "└" in out.read_text(), 60)
    return process, url, out, env


def password_works(out: Path, env: dict) -> bool:
    """Whether the password the box shows is the admin's (asked of the instance's database)."""
    password = out.read_text().split("Password    ")[1].split()[0]
    check = (
        "from django.contrib.auth import get_user_model as g;"
        f"print(g().objects.get(username='admin').check_password({password!r}))"
    )
    done = subprocess.run(
        [sys.executable, MANAGE, "shell", "-c", check], env=env, capture_output=True, text=True
    )
    return done.stdout.strip().splitlines()[-1] == "True"


def test_two_instances_run_side_by_side_and_stop_cleanly(tmp_path):
    started = [start(tmp_path / name / "data", tmp_path / name) for name in ("one", "two")]
    try:
        for _process, url, out, env in started:
            with urllib.request.urlopen(url + "/login/", timeout=10) as response:
                assert response.status == 200
            shown = out.read_text()
            assert "Log in as   admin" in shown and f"memhub is running at {url}/" in shown
            assert "Started worker" not in shown  # the HTTP server's lines are in its log
            logs = Path(env["MEMHUB_DATA_DIR"]) / "logs"
            wait_until(lambda logs=logs: "GET /login/" in (logs / "access.log").read_text(), 10)
            assert "Started worker-1" in (logs / "server.log").read_text()
            assert password_works(out, env)  # the password in the box logs the admin in
    finally:
        codes = [stop_serve(process) for process, *_ in started]
    assert codes == [0, 0]


def test_the_box_says_how_to_log_in_in_each_case(tmp_path):
    generated = banner("http://127.0.0.1:8000/", tmp_path, FirstAdmin("admin", True, "pw123"))
    lines = generated.splitlines()
    assert lines[0].startswith("┌") and lines[-1].startswith("└")
    assert len({len(line) for line in lines}) == 1  # a closed box
    assert "│ Password    pw123" in generated
    from_env = banner("http://x/", tmp_path, FirstAdmin("admin", True))
    assert "MEMHUB_ADMIN_PASSWORD" in from_env
    existing = banner("http://x/", tmp_path, FirstAdmin("ana", False))
    assert "manage.py changepassword ana" in existing
    assert "Log in" not in banner("http://x/", tmp_path, None)


def test_on_every_address_the_box_names_one_that_answers(tmp_path):
    """MEMHUB_BIND=0.0.0.0 (to serve a team): the box named http://0.0.0.0:PORT/, which the
    site answers with 400 Bad Request (no host name it serves), the first thing a person opens."""
    process, url, out, _env = start(tmp_path / "data", tmp_path, host="0.0.0.0")
    try:
        shown = out.read_text().split("memhub is running at ")[1].split()[0]
        with urllib.request.urlopen(shown + "login/", timeout=10) as response:
            assert response.status == 200
    finally:
        stop_serve(process)
