"""Reviewing a snapshot update in Debian's chromium: register a checkout, open the pending
update, read the diff, untick a file and approve a merge; then the agent's memory matches."""

from __future__ import annotations

import json
import subprocess

import pytest

from memapp.memdir.agent_snapshots import MARKER_FILENAME
from snapshots.actions import do_register_checkout
from snapshots.models import SnapshotDecision
from tests.browser.login import log_in
from tests.browser.screens import DESKTOP
from tests.client.test_sync import fake_github_token
from tests.snapshots.conftest import LOCAL, SNAPSHOT, T1, T2, topic, write_files, write_snapshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup(tmp_path, monkeypatch, alice):
    base = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(base))
    monkeypatch.delenv("CLAUDE_CODE_REMOTE_MEMORY_DIR", raising=False)
    repo = tmp_path / "src" / "widgets"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/widgets.git"],
        check=True,
    )
    write_snapshot(repo, "reviewer", T2, SNAPSHOT)
    memory = write_files(base / "agent-memory" / "reviewer", LOCAL)
    (memory / MARKER_FILENAME).write_text(json.dumps({"syncedFrom": T1}))
    return repo, memory


def test_a_person_reviews_the_diff_and_approves_a_merge(live_server, page, screenshot, setup):
    repo, memory = setup
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)

    page.click("text=Snapshot updates")
    page.wait_for_load_state()
    assert page.locator("#pending h2").inner_text() == "Waiting for your decision (0)"
    page.fill("#id_path", str(repo))
    page.click("form.register button[type=submit]")
    assert "Registered" in page.locator(".message.success").inner_text()
    assert page.locator("#pending h2").inner_text() == "Waiting for your decision (1)"
    screenshot("snapshots-list")

    page.click("#pending a.button")
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == "Agent reviewer · user scope"
    assert page.locator(".status.big").inner_text() == "update available"
    files = page.locator("section.file")
    assert files.count() == 3  # MEMORY.md and tests.md changed, flaky.md added
    tests_md = page.locator("section.file[data-file='tests.md']")
    assert tests_md.locator(".change").inner_text() == "CHANGED"
    assert tests_md.locator("table.frontmatter-diff tbody tr").count() == 2  # description, type
    assert tests_md.locator("tr.replace td.left").first.inner_text() == "Use a database."
    assert tests_md.locator("tr.replace td.right").first.inner_text() == "Use the real database."
    assert page.locator("#checks").inner_text().endswith("every header readable.")
    assert "replace deletes it" in page.locator("#removed").inner_text()
    screenshot("snapshots-review")

    index = page.locator("section.file[data-file='MEMORY.md'] input[type=checkbox]")
    assert not index.is_checked()  # a merge keeps our index and adds the lines it needs
    assert page.locator("section.file[data-file='flaky.md'] input[type=checkbox]").is_checked()
    assert tests_md.locator("input[type=checkbox]").is_checked()
    page.click("text=browse this store")
    assert page.locator("h1").inner_text() == "AGENT agent reviewer (user scope)"
    page.go_back()

    # Take the new memory, keep our own tests.md.
    tests_md.locator("input[type=checkbox]").uncheck()
    page.click("button[value=merge]")
    page.wait_for_load_state()

    message = page.locator(".message.success").inner_text()
    assert message.startswith(
        "Done: merge the ticked files — 1 file written, 0 removed, 1 index line added"
    )
    assert page.locator(".status.big").inner_text() == "in sync"
    assert "merge the ticked files" in page.locator("#history").inner_text()
    screenshot("snapshots-merged")

    assert sorted(p.name for p in memory.iterdir()) == [
        MARKER_FILENAME,
        "MEMORY.md",
        "flaky.md",
        "mine.md",
        "style.md",
        "tests.md",
    ]
    assert (memory / "MEMORY.md").read_text() == (
        LOCAL["MEMORY.md"] + "- [Flaky](flaky.md) — flaky tests\n"
    )
    assert (memory / "flaky.md").read_text() == SNAPSHOT["flaky.md"]
    assert (memory / "tests.md").read_text() == LOCAL["tests.md"]
    assert (memory / "mine.md").read_text() == LOCAL["mine.md"]
    assert json.loads((memory / MARKER_FILENAME).read_text()) == {"syncedFrom": T2}
    decision = SnapshotDecision.objects.get()
    assert (decision.decision, decision.decided_by.username) == ("merge", "alice")
    assert sorted(decision.files) == ["flaky.md"]

    page.click("text=Snapshot updates")
    assert page.locator("#pending").inner_text().endswith("Nothing to decide.")


def test_the_checks_name_secrets_and_hostile_files_without_showing_them(
    live_server, page, screenshot, setup, alice
):
    repo, _ = setup
    snapshot = repo / ".claude" / "agent-memory-snapshots" / "reviewer"
    token = fake_github_token()
    (snapshot / "deploy.md").write_text(topic("Deploy", "deploy key", body=f"key: {token}\n"))
    (snapshot / "%2e%2e%2fescape.md").write_text(topic("Escape", "escape"))
    (snapshot / "broken.md").write_text('---\nname: "unclosed\n---\nBody\n')
    do_register_checkout(alice, repo)
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/snapshots/")
    page.click("#pending a.button")
    page.wait_for_load_state()

    checks = page.locator("#checks").inner_text()
    assert "deploy.md, line 6: GitHub personal access token (github-pat)" in checks
    assert "%2e%2e%2fescape.md: URL-decoding or NFKC normalisation" in checks
    assert "broken.md: broken frontmatter: invalid YAML" in checks
    assert token not in page.content()
    deploy = page.locator("section.file[data-file='deploy.md']")
    assert deploy.locator("input[type=checkbox]").is_disabled()
    assert deploy.locator("table.diff").count() == 0
    screenshot("snapshots-checks")
