"""`memhub-agent snapshot publish|push|apply` against a real memhub server: bob publishes a
snapshot, alice's machine pushes it for review, alice approves a merge, her agent applies it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from memapp.memdir.agent_snapshots import MARKER_FILENAME
from snapshots.models import Checkout, SnapshotDecision
from tests.client.conftest import Machine, topic
from tests.client.test_sync import fake_github_token

pytestmark = pytest.mark.django_db(transaction=True)

T1 = "2026-03-01T10:00:00.000Z"
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def agent_dir(machine: Machine) -> Path:
    return machine.home / ".claude" / "agent-memory" / "reviewer"


def snapshot_of(machine: Machine) -> Path:
    return machine.checkout / ".claude" / "agent-memory-snapshots" / "reviewer"


def write(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")


def files_of(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir()) if p.is_file()}


BOB_MEMORY = {
    "MEMORY.md": "- [Style](style.md) — style guide\n- [Tests](tests.md) — test rules\n",
    "style.md": topic("Style", "Style guide lives in docs/style.md", "reference"),
    "tests.md": topic("Tests", "Integration tests hit a real database"),
}
ALICE_MEMORY = {
    "MEMORY.md": "- [Tests](tests.md) — test rules\n- [Mine](mine.md) — my notes\n",
    "tests.md": topic("Tests", "Tests hit a database"),
    "mine.md": topic("Mine", "My own notes", "user"),
}


@pytest.fixture
def published(machine_a) -> str:
    """bob publishes his reviewer's memory as a snapshot; it reaches alice's checkout by git."""
    write(agent_dir(machine_a), BOB_MEMORY)
    result = machine_a.run("snapshot", "publish", "reviewer")
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def alice_machine(machine_b, server, published, machine_a) -> Machine:
    shutil.copytree(snapshot_of(machine_a), snapshot_of(machine_b))  # a commit, then a pull
    write(agent_dir(machine_b), ALICE_MEMORY)
    (agent_dir(machine_b) / MARKER_FILENAME).write_text(json.dumps({"syncedFrom": T1}))
    machine_b.login(server)
    return machine_b


def review_page(client, alice, output: str) -> tuple[str, str]:
    url = re.search(r"review it at (\S+)", output).group(1)
    path = "/" + url.split("/", 3)[3]
    client.force_login(alice)
    html = client.get(path).content.decode()
    return path, re.search(r'name="fingerprint" value="([0-9a-f]+)"', html).group(1)


def test_publish_writes_a_snapshot_of_the_agents_memory(machine_a, published):
    snapshot = snapshot_of(machine_a)
    stamp = json.loads((snapshot / "snapshot.json").read_text())["updatedAt"]
    assert ISO.fullmatch(stamp)
    assert published.strip() == (
        f"published 3 files of reviewer (user scope) to "
        f".claude/agent-memory-snapshots/reviewer as {stamp}; commit it to share it"
    )
    assert {k: v for k, v in files_of(snapshot).items() if k != "snapshot.json"} == BOB_MEMORY
    marker = json.loads((agent_dir(machine_a) / MARKER_FILENAME).read_text())
    assert marker == {"syncedFrom": stamp}


def test_publish_refuses_when_the_secret_filter_finds_anything(machine_a):
    token = fake_github_token()
    write(agent_dir(machine_a), {"a.md": topic("A", "a"), "b.md": topic("B", "b", body=token)})
    result = machine_a.run("snapshot", "publish", "reviewer")
    assert result.returncode == 1
    assert "b.md: line 6: GitHub personal access token (github-pat)" in result.stderr
    assert "the secret filter found secrets: nothing published" in result.stderr
    assert token not in result.stderr + result.stdout
    assert not snapshot_of(machine_a).exists()


def test_a_published_snapshot_is_reviewed_approved_and_applied(
    client, alice, alice_machine, machine_a
):
    pushed = alice_machine.run("snapshot", "push", "reviewer")
    assert pushed.returncode == 0, pushed.stderr
    assert pushed.stdout.splitlines()[0] == "pushed reviewer of acme/widgets"
    assert pushed.stdout.splitlines()[1].startswith("user: update available — review it at http")

    waiting = alice_machine.run("snapshot", "apply", "reviewer")
    assert waiting.returncode == 0, waiting.stderr
    assert "user: waiting for a decision — review it at" in waiting.stdout

    path, fingerprint = review_page(client, alice, pushed.stdout)
    response = client.post(
        path, {"decision": "merge", "fingerprint": fingerprint, "files": ["style.md"]}
    )
    assert response.status_code == 302
    decision = SnapshotDecision.objects.get()
    assert decision.applied_at is None
    assert files_of(agent_dir(alice_machine))["tests.md"] == ALICE_MEMORY["tests.md"]

    applied = alice_machine.run("snapshot", "apply", "reviewer")

    assert applied.returncode == 0, applied.stderr
    stamp = json.loads((snapshot_of(machine_a) / "snapshot.json").read_text())["updatedAt"]
    assert applied.stdout.strip() == (
        f"user: merge applied from the snapshot of {stamp} (1 written, 0 removed)"
    )
    assert files_of(agent_dir(alice_machine)) == {
        MARKER_FILENAME: json.dumps({"syncedFrom": stamp}),
        "MEMORY.md": ALICE_MEMORY["MEMORY.md"] + "- [Style](style.md) — style guide\n",
        "mine.md": ALICE_MEMORY["mine.md"],
        "style.md": BOB_MEMORY["style.md"],
        "tests.md": ALICE_MEMORY["tests.md"],  # not ticked: alice's version stays
    }
    decision.refresh_from_db()
    assert decision.applied_at is not None  # the push after applying confirmed it
    server_copy = Checkout.objects.get().memory_dir("reviewer", "user")
    assert files_of(server_copy) == files_of(agent_dir(alice_machine))

    again = alice_machine.run("snapshot", "apply", "reviewer")
    assert again.stdout.strip() == "user: merge already applied"


def test_push_skips_files_with_secrets_and_says_so(alice_machine):
    token = fake_github_token()
    write(agent_dir(alice_machine), {"leak.md": topic("Leak", "token", body=f"{token}\n")})
    result = alice_machine.run("snapshot", "push", "reviewer")
    assert result.returncode == 0, result.stderr
    assert (
        "skipped user/leak.md: line 6: GitHub personal access token (github-pat) — not sent"
        in result.stderr
    )
    assert token not in result.stderr + result.stdout
    server_copy = Checkout.objects.get().memory_dir("reviewer", "user")
    assert "leak.md" not in files_of(server_copy)


def test_apply_refuses_files_that_changed_since_they_were_approved(client, alice, alice_machine):
    pushed = alice_machine.run("snapshot", "push", "reviewer")
    path, fingerprint = review_page(client, alice, pushed.stdout)
    client.post(path, {"decision": "replace", "fingerprint": fingerprint, "confirm": "yes"})
    (snapshot_of(alice_machine) / "style.md").write_text(topic("Style", "rewritten locally"))
    before = files_of(agent_dir(alice_machine))

    result = alice_machine.run("snapshot", "apply", "reviewer")

    assert result.returncode == 1
    assert "user: not applied: 'style.md' changed since it was approved" in result.stderr
    assert files_of(agent_dir(alice_machine)) == before
    assert SnapshotDecision.objects.get().applied_at is None


def test_a_dismissed_update_is_left_alone(client, alice, alice_machine):
    pushed = alice_machine.run("snapshot", "push", "reviewer")
    path, fingerprint = review_page(client, alice, pushed.stdout)
    client.post(path, {"decision": "dismiss", "fingerprint": fingerprint})
    before = files_of(agent_dir(alice_machine))
    result = alice_machine.run("snapshot", "apply", "reviewer")
    assert result.stdout.strip() == "user: dismissed for now"
    assert files_of(agent_dir(alice_machine)) == before


def test_apply_before_any_push_says_what_to_do(machine_b, server):
    machine_b.login(server)
    result = machine_b.run("snapshot", "apply", "reviewer")
    assert result.returncode == 5  # the server has nothing to apply
    assert result.stderr.strip() == (
        "memhub-agent: memhub has nothing of acme/widgets from this machine yet: "
        "run `memhub-agent snapshot push reviewer` first"
    )
