"""`memhub-agent log` and the daily logs of `memhub-agent sync`, with the real console script
against a real memhub server (docs/design.md §14.8): an entry reaches the server's log and the
local one; a refused line never leaves the machine; with memhub down the entry is kept and the
next sync sends it; two machines' logs merge, each line once."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from memapp.stores.models import Store
from tests.client.conftest import SLUG
from tests.memdir.test_secret_rules import fake_tokens

pytestmark = pytest.mark.django_db(transaction=True)


def today_key() -> str:
    day = datetime.date.today()  # the machine's local date, as memhub-agent names the log
    return f"logs/{day:%Y}/{day:%m}/{day.isoformat()}.md"


def server_log(key: str) -> str:
    store = Store.objects.get(kind=Store.Kind.PRIVATE, project__key=SLUG)
    path = Path(store.path) / key
    return path.read_text() if path.exists() else ""


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    return machine_a


@pytest.fixture
def b(machine_b, server):
    machine_b.login(server)
    return machine_b


def bullets(text: str) -> list[str]:
    """Entries without their time (which depends on the minute the test ran)."""
    return [line.split(" ", 2)[2] for line in text.splitlines() if line.startswith("- ")]


def test_an_entry_reaches_the_servers_log_and_the_local_one(a):
    result = a.run("log", "--type", "feedback", "Never", "mock", "the", "database.")
    assert result.returncode == 0, result.stderr
    key = today_key()
    assert result.stdout.startswith(f"logged to {key}: - ")
    assert bullets(server_log(key)) == ["[feedback] Never mock the database."]
    assert a.read(key) == server_log(key)


def test_a_line_with_a_secret_never_leaves_the_machine(a):
    token = fake_tokens()["github-pat"]
    result = a.run("log", f"the token is {token}")
    assert result.returncode == 2  # the command line's class for a request refused as asked
    assert "secret" in result.stderr and "GitHub" in result.stderr
    assert token not in result.stderr
    assert not Store.objects.exists()
    assert not (a.memory_dir / today_key()).exists()


@pytest.mark.parametrize(
    "line",
    [
        "backups use AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE from the AWS docs",
        "DB_PASSWORD=Sup3rSecretPa55x on the replica",
        "ci runs docker login -u deploy -p dckr_pat_Qm7Lx2Vt9Pz4 registry",
    ],
)
def test_the_shapes_of_issue_23_never_leave_the_machine(a, line):
    result = a.run("log", line)
    assert result.returncode == 2, result.stdout
    assert "secret" in result.stderr
    assert not Store.objects.exists()
    assert not (a.memory_dir / today_key()).exists()


def test_a_line_over_4_kb_is_refused_with_the_reason(a):
    result = a.run("log", "x" * 5000)
    assert result.returncode == 2 and "4 KB" in result.stderr


def test_with_memhub_down_the_entry_is_kept_and_the_next_sync_sends_it(a, server, closed_port):
    a.extra_env["MEMHUB_URL"] = f"http://127.0.0.1:{closed_port}"
    result = a.run("log", "written while offline")
    assert result.returncode == 0, result.stderr
    assert "cannot be reached" in result.stderr and "sync" in result.stderr
    key = today_key()
    assert bullets(a.read(key)) == ["written while offline"]
    del a.extra_env["MEMHUB_URL"]
    result = a.sync()
    assert "daily logs: sent 1 entries, received 0, across 1 days" in result.stdout
    assert bullets(server_log(key)) == ["written while offline"]


def test_two_machines_logs_merge_each_line_once(a, b):
    key = today_key()
    assert a.run("log", "from the laptop").returncode == 0
    b.write(key, "- 08:00 written by the desktop's agent\n")
    b.write("logs/2026/01/2026-01-31.md", "- 17:00 an older day\n")

    result = b.sync()
    assert "daily logs: sent 2 entries, received 1, across 2 days" in result.stdout
    assert a.sync().stdout.count("daily logs") == 1
    for machine in (a, b):
        assert sorted(bullets(machine.read(key))) == [
            "from the laptop",
            "written by the desktop's agent",
        ]
        assert machine.read("logs/2026/01/2026-01-31.md") == "- 17:00 an older day\n"
    assert sorted(bullets(server_log(key))) == sorted(bullets(a.read(key)))
    assert "daily logs" not in a.sync().stdout + b.sync().stdout  # nothing left to do


def test_a_refused_line_in_a_local_log_stays_local_and_the_rest_goes(a):
    token = fake_tokens()["slack-bot-token"]
    key = "logs/2026/02/2026-02-02.md"
    a.write(key, f"- 09:00 fine\n- 09:01 token {token}\n- 09:02 also fine\n")
    result = a.run("sync")
    assert result.returncode == 1  # finished, with a line left out: look at what it printed
    assert "daily logs: sent 2 entries, received 0, across 1 days; 1 kept here" in result.stdout
    assert "kept here" in result.stderr and token not in result.stdout + result.stderr
    assert server_log(key) == "- 09:00 fine\n- 09:02 also fine\n"


def test_a_dry_run_reports_and_changes_nothing(a):
    a.write("logs/2026/02/2026-02-02.md", "- 09:00 one\n- 09:01 two\n")
    result = a.run("sync", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "dry run: daily logs: sent 2 entries, received 0, across 1 days" in result.stdout
    assert not Store.objects.exists()


def test_daily_log_mode_from_memhub_agent_log_to_an_approved_topic_file(a, alice):
    """Daily-log mode end to end: the prompt asks for today's log, `memhub-agent log` writes
    it, "Consolidate now" distills it, the person approves on the review page, and the next
    sync brings the topic file and its index line to the agent's machine."""
    from django.test import Client
    from django.urls import reverse

    from memapp.lifecycle.models import Proposal
    from memapp.memdir.index import parse_index_entries
    from memapp.stores.flags import set_flag
    from tests.conftest import PASSWORD
    from tests.lifecycle.conftest import run_worker

    set_flag("daily_log_mode", True, user=alice)
    prompt = a.run("prompt")
    assert prompt.returncode == 0, prompt.stderr
    assert f"{a.memory_dir}/{today_key()}" in prompt.stdout

    line = "Staging moves to staging-2.example.com next Tuesday. Why: the old host is retired."
    assert a.run("log", "--type", "project", line).returncode == 0

    person = Client()
    assert person.login(username="alice", password=PASSWORD)
    store = Store.objects.get(kind=Store.Kind.PRIVATE, project__key=SLUG)
    assert person.post(reverse("consolidate_now", args=[store.pk])).status_code == 302
    run_worker()
    proposal = Proposal.objects.get(kind="distillation", status="pending")
    topic = proposal.changes.get(action="create")
    assert topic.type == "project" and "Staging moves to staging-2.example.com" in topic.name
    assert "**Why:** the old host is retired." in topic.body
    assert "next Tuesday" not in topic.description  # made absolute against the log's day
    url = reverse("proposal", args=[proposal.pk])
    ticks = [c.pk for c in proposal.changes.all()]
    assert person.post(url, {"decision": "approve", "changes": ticks}).status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "applied"

    a.sync()
    assert "**Why:** the old host is retired." in a.read(topic.key)
    entries = [entry.path for entry in parse_index_entries(a.read("MEMORY.md"))]
    assert topic.key in entries
    timeline = person.get(reverse("daily_logs", args=[store.pk])).content.decode()
    assert '<span class="flag info">distilled</span>' in timeline
