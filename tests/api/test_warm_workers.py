"""What a warm worker keeps per process (memapp.stores.warm) never outlives a change: two HTTP
servers (memapp.http_server) share this test's database and cache, each is warmed with
requests, then a change is made here, and the very next request to each of them sees it. Each
test fails when a worker answers from what it kept before the change."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.utils import timezone

from memapp import http_server
from memapp.bench.web import _free_port
from memapp.stores.actions import do_save_memory
from memapp.stores.flags import set_flag
from memapp.stores.members import do_remove_member
from memapp.stores.models import ApiToken, Project, Store
from memapp.stores.tokens import do_create_api_token, do_revoke_api_token
from tests.conftest import write_memory

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def _database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"]) + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    host = db["HOST"] or db.get("OPTIONS", {}).get("host", "")
    if host.startswith("/"):  # a Unix socket's directory
        return f"postgres://{auth}@/{db['NAME']}?host={host}"
    return f"postgres://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    """One HTTP server of one worker, as `manage.py serve` runs it, on this test database."""

    def __init__(self, database_url: str, data_dir: Path) -> None:
        self.port = _free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "MEMHUB_DATA_DIR": str(data_dir),
            "MEMHUB_DISCOVER": "0",
            "MEMHUB_DEBUG": "0",
            "ANTHROPIC_API_KEY": "",
            "MEMHUB_CACHE_URL": "db://",
            "MEMHUB_API_RATE": "100000/min",
        }
        command = http_server.command(f"127.0.0.1:{self.port}", workers=1)
        self.log = data_dir / f"server-{self.port}.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def wait(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the HTTP server exited"
            try:
                self.post("/api/v1/recall", "", {})
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the HTTP server did not answer")

    def post(self, path: str, token: str, body: dict) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
            conn.request("POST", path, json.dumps(body), headers)
            response = conn.getresponse()
            raw = response.read()
            assert response.status < 500, self.log.read_text()[-3000:]
            return response.status, (json.loads(raw) if raw else {})
        finally:
            conn.close()

    def get(self, path: str, token: str) -> str:
        """The answer's status, or the error's code when there is one."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
            response = conn.getresponse()
            raw = response.read()
            assert response.status < 500, self.log.read_text()[-3000:]
            return json.loads(raw)["error"]["code"] if response.status >= 400 else "200"
        finally:
            conn.close()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)


@pytest.fixture(scope="module")
def workers(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        url = _database_url()
    with tempfile.TemporaryDirectory(prefix="memhub-warm-") as tmp:
        started = [Worker(url, Path(tmp)), Worker(url, Path(tmp))]
        try:
            for worker in started:
                worker.wait()
            yield started
        finally:
            for worker in started:
                worker.stop()


@pytest.fixture
def project(alice, tmp_path):
    """alice's private store and the team store of acme/app, one memory in each."""
    project = Project.objects.create(key="acme/app")
    project.members.add(alice)
    private_dir, team_dir = tmp_path / "private", tmp_path / "team"
    write_memory(private_dir, "feedback_tests.md", "Real DB", "Tests hit a real DB", "feedback")
    write_memory(team_dir, "project_release.md", "Release", "Release freeze on Fridays", "project")
    Store.objects.create(
        kind=Store.Kind.PRIVATE, path=str(private_dir), project=project, owner=alice
    )
    Store.objects.create(kind=Store.Kind.TEAM, path=str(team_dir), project=project)
    return project


def recall(worker: Worker, token: str, query: str) -> tuple[int, dict]:
    return worker.post("/api/v1/recall", token, {"project": "acme/app", "query": query})


def paths(answer: dict) -> list[str]:
    return [memory["path"] for memory in answer["memories"]]


def warm(workers, token: str, query: str) -> list[dict]:
    """Each worker answers twice (the second from what it kept); both answers returned."""
    answers = []
    for worker in workers:
        for _ in range(2):
            status, answer = recall(worker, token, query)
            assert status == 200, answer
        answers.append(answer)
    return answers


def test_a_revoked_token_is_refused_by_every_worker_at_once(workers, alice, project):
    row, token = do_create_api_token(alice, "agent")
    other_row, other = do_create_api_token(alice, "script")
    warm(workers, token, "database tests")
    warm(workers, other, "database tests")
    do_revoke_api_token(row)
    for worker in workers:
        assert recall(worker, token, "database tests")[0] == 401
        assert recall(worker, other, "database tests")[0] == 200
    ApiToken.objects.filter(pk=other_row.pk).update(revoked_at=timezone.now())  # in bulk
    for worker in workers:
        assert recall(worker, other, "database tests")[0] == 401


def test_an_expired_token_is_refused_by_every_worker_at_once(workers, alice, project):
    row, token = do_create_api_token(alice, "agent")
    row.expires_at = timezone.now() + timedelta(seconds=3)
    row.save(update_fields=["expires_at"])
    warm(workers, token, "database tests")
    time.sleep(max(0.0, (row.expires_at - timezone.now()).total_seconds()) + 0.1)
    for worker in workers:
        assert recall(worker, token, "database tests")[0] == 401


def test_a_deactivated_user_is_refused_by_every_worker_at_once(workers, alice, project):
    _row, token = do_create_api_token(alice, "agent")
    warm(workers, token, "database tests")
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    for worker in workers:
        assert recall(worker, token, "database tests")[0] == 401


def test_a_removed_member_loses_the_team_memory_in_every_worker_at_once(
    workers, alice, sam, project
):
    _row, token = do_create_api_token(alice, "agent")
    for answer in warm(workers, token, "release freeze fridays"):
        assert "team/project_release.md" in paths(answer)
    do_remove_member(project, alice, by=sam)
    for worker in workers:
        status, answer = recall(worker, token, "release freeze fridays")
        assert status == 200 and "team/project_release.md" not in paths(answer)


def test_a_changed_flag_holds_in_every_worker_at_once(workers, alice, project):
    _row, token = do_create_api_token(alice, "agent")
    for answer in warm(workers, token, "database tests"):
        assert answer["selector"] == "offline" and answer["memories"]
    set_flag("recall", False, project=project)
    for worker in workers:
        status, answer = recall(worker, token, "database tests")
        assert status == 200 and answer["selector"] == "disabled"
    set_flag("recall_max", 1, project=project)
    set_flag("recall", True, project=project)
    for worker in workers:
        assert len(recall(worker, token, "release freeze database tests")[1]["memories"]) == 1


def test_a_new_or_edited_memory_is_recalled_by_every_worker_at_once(workers, alice, project):
    _row, token = do_create_api_token(alice, "agent")
    for answer in warm(workers, token, "kubernetes canary rollout"):
        assert answer["memories"] == []
    store = Store.objects.get(kind=Store.Kind.PRIVATE, owner=alice)
    saved = do_save_memory(
        store,
        alice,
        name="Canary",
        description="Kubernetes canary rollout goes through Argo",
        memory_type="project",
        body="Use the argo rollout.\n",
    )
    for worker in workers:
        assert paths(recall(worker, token, "kubernetes canary rollout")[1]) == [saved.path]
    do_save_memory(
        store,
        alice,
        name="Canary",
        description="Blue green deploys through Spinnaker",
        memory_type="project",
        body="Use spinnaker.\n",
        path=saved.path,
    )
    for worker in workers:
        assert paths(recall(worker, token, "spinnaker blue green deploys")[1]) == [saved.path]


def test_a_deleted_store_is_not_recalled_by_any_worker(workers, alice, project):
    _row, token = do_create_api_token(alice, "agent")
    for answer in warm(workers, token, "database tests"):
        assert paths(answer) == ["feedback_tests.md"]
    Store.objects.get(kind=Store.Kind.PRIVATE, owner=alice).delete()
    for worker in workers:
        status, answer = recall(worker, token, "database tests")
        assert status == 200 and answer["memories"] == []


def test_the_team_memory_protocol_follows_membership_flags_and_the_store_at_once(
    workers, alice, sam, project, tmp_path
):
    """Claude Code's team memory sync asks for the checksums on every session: a worker that
    kept the answer to who may read which store must not outlive a change of it."""
    _row, token = do_create_api_token(alice, "agent")
    hashes = "/api/claude_code/team_memory?repo=acme/app&view=hashes"
    for worker in workers:
        assert [worker.get(hashes, token) for _ in range(2)] == ["200", "200"]
    set_flag("team_memory", False, project=project)
    assert [worker.get(hashes, token) for worker in workers] == ["team_memory_off"] * 2
    set_flag("team_memory", True, project=project)
    assert [worker.get(hashes, token) for worker in workers] == ["200", "200"]
    Store.objects.filter(project=project, kind=Store.Kind.TEAM).delete()
    assert [worker.get(hashes, token) for worker in workers] == ["empty", "empty"]
    write_memory(tmp_path / "new", "project_ci.md", "CI", "CI runs on every push", "project")
    Store.objects.create(kind=Store.Kind.TEAM, path=str(tmp_path / "new"), project=project)
    assert [worker.get(hashes, token) for worker in workers] == ["200", "200"]
    do_remove_member(project, alice, by=sam)
    assert [worker.get(hashes, token) for worker in workers] == ["no_project", "no_project"]
