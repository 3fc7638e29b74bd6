"""Trusting memhub with the team's memory, in Debian's chromium: a wrong edit undone in two
clicks, forgetting and the trash, a search that ranks, what the agent would recall, what waits
for you, conflicts as diffs, team work. Each page is photographed at desktop width and at
390 px (a phone) in test-artifacts/."""

from __future__ import annotations

import io
import os
import time
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Project, Store
from memapp.stores.tokens import do_create_api_token
from teamsync.models import BlockedFile, TeamConflict
from tests.browser.login import log_in
from tests.browser.screens import DESKTOP, PHONE
from tests.conftest import PASSWORD, write_memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def both(page, screenshot):
    """Photograph the page at desktop width and at 390 px, and check that one part of it
    (`main` unless told) fits the phone; unlike `at_both_widths`, not the whole document."""

    def take(name: str, part: str = "main") -> None:
        screenshot(f"{name}-desktop")
        page.set_viewport_size(PHONE)
        screenshot(f"{name}-390")
        # What this shows fits a phone (the navigation bar, and the pages this file only
        # passes through, are the responsive layout's business).
        width = page.evaluate(f"document.querySelector('{part}').scrollWidth")
        assert width <= PHONE["width"], f"{name}: the content is {width} px wide on a phone"
        page.set_viewport_size(DESKTOP)

    page.set_viewport_size(DESKTOP)
    return take


@pytest.fixture
def private_dir(memory_base, alice) -> Path:
    directory = memory_base / "projects" / "-home-alice-app" / "memory"
    write_memory(
        directory,
        "project_flaky_ci.md",
        "Flaky CI job",
        "The nightly integration job fails now and then",
        "project",
        "test_orders fails when the runner's disk fills up under load.\n\n**Why:** the cleanup "
        "step is racy.\n**How to apply:** rerun once before digging in.\n",
    )
    old = time.time() - 12 * 86_400
    os.utime(directory / "project_flaky_ci.md", (old, old))
    with (directory / "MEMORY.md").open("a") as index:
        index.write("- [Flaky CI job](project_flaky_ci.md) — retry once\n")
    discover_local_stores(memory_base)
    project = Store.objects.get(kind="private").project
    project.members.add(alice)
    return directory


def private_store() -> Store:
    return Store.objects.get(kind="private")


def test_a_wrong_edit_is_undone_in_two_clicks(live_server, page, both, private_dir, alice):
    original = (private_dir / "feedback_tests.md").read_bytes()
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{private_store().pk}/m/feedback_tests.md/edit/")
    page.fill("#id_description", "Tests mock the database")  # the wrong edit
    page.fill("#id_body", "Mock everything.\n\n**Why:** speed.\n**How to apply:** always.\n")
    page.click("button:has-text('Save')")
    page.wait_for_url("**/m/feedback_tests.md")
    assert b"Tests mock the database" in (private_dir / "feedback_tests.md").read_bytes()
    both("trust-01-after-a-wrong-edit")

    page.click("a.button:has-text('History')")  # click 1
    page.wait_for_url("**/m/feedback_tests.md/history/")
    assert page.locator("table.versions tbody tr").count() == 2
    assert "found on disk · first seen" in page.locator("table.versions tbody tr").last.inner_text()
    both("trust-02-history")
    page.click("button:has-text('Restore this version')")  # click 2
    page.wait_for_url("**/m/feedback_tests.md")
    assert (private_dir / "feedback_tests.md").read_bytes() == original
    assert "- [Real DB](feedback_tests.md) — no mocks" in (private_dir / "MEMORY.md").read_text()
    assert page.locator(".message.success").inner_text().startswith("Restored the version of ")
    assert page.locator("h1").inner_text() == "Real DB"
    both("trust-03-restored")

    page.click("a.button:has-text('History')")
    page.wait_for_load_state()
    rows = page.locator("table.versions tbody tr")
    assert rows.count() == 3
    assert "restored the version of" in rows.first.inner_text()
    # Compare the wrong edit with the restored version.
    page.check("table.versions tbody tr:nth-child(2) input[name=a]")
    page.check("table.versions tbody tr:nth-child(1) input[name=b]")
    page.click("button:has-text('Compare the two chosen versions')")
    page.wait_for_selector("#compare table.diff")
    assert page.locator("#compare tr.del mark").first.inner_text() == "mock the"
    both("trust-04-compare")


def test_forgetting_goes_to_the_trash_and_comes_back(live_server, page, both, private_dir, alice):
    store = private_store()
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/m/user_role.md")
    page.click("a.button:has-text('Forget')")
    page.wait_for_load_state()
    assert "trash for 30 days" in page.locator("main").inner_text()
    both("trust-05-forget-asks")
    page.click("button:has-text('Forget this memory')")
    page.wait_for_url(f"{live_server.url}/stores/{store.pk}/")
    assert not (private_dir / "user_role.md").exists()
    page.click("a.button:has-text('Trash (1)')")
    page.wait_for_url("**/trash/")
    both("trust-06-trash")
    page.click("button:has-text('Restore')")
    page.wait_for_url("**/m/user_role.md")
    assert (private_dir / "user_role.md").exists()
    assert "- [Role](user_role.md) — who Alice is" in (private_dir / "MEMORY.md").read_text()


def test_search_ranks_like_recall_and_marks_the_words(live_server, page, both, private_dir, alice):
    log_in(page, live_server)
    page.goto(f"{live_server.url}/search/")
    page.locator("input[name=q]").press_sequentially("flaky tests", delay=30)
    expect(page.locator("#memory-list a.title").first).to_have_text("Flaky CI job")
    assert page.locator("#memory-list a.title").first.inner_text() == "Flaky CI job"
    marks = page.locator("#memory-list tr:first-child mark.hit").all_inner_texts()
    assert marks[:2] == ["Flaky", "now and then"]
    both("trust-07-search")


def test_what_would_my_agent_recall(live_server, page, both, private_dir, alice):
    log_in(page, live_server)
    page.click("nav summary:has-text('More')")
    page.click("nav a:has-text('Try recall')")
    page.fill("#id_query", "the CI is flaky again, what do we know?")
    page.fill("#id_tools", "Bash")
    page.click("button:has-text('Recall')")
    page.wait_for_selector("#recalled")
    assert page.locator("#recalled h2").inner_text() == "1 memory recalled"
    assert "matches: ci, flaky" in page.locator("#recalled").inner_text()
    assert "This memory is 12 days old." in page.locator("#recalled pre.agent-header").inner_text()
    both("trust-08-recall-preview")


def test_what_waits_for_you_and_a_conflict_as_a_diff(live_server, page, both, private_dir, alice):
    team = Store.objects.get(kind="team")
    base = "---\nname: Release\ndescription: Freeze\ntype: project\n---\nFreeze on 2026-03-05.\n"
    ours = base.replace("2026-03-05", "2026-03-06")
    (Path(team.path) / "project_release.md").write_text(ours)  # what the store holds: "ours"
    TeamConflict.objects.create(
        store=team,
        key="project_release.md",
        kind="edit",
        base=base,
        ours=ours,
        theirs=base.replace("2026-03-05", "2026-03-12") + "Ask Dora first.\n",
    )
    BlockedFile.objects.create(
        store=team,
        key="reference_ci.md",
        reason="secret",
        hits=[{"rule_id": "github-pat", "label": "GitHub token", "line": 7}],
    )
    log_in(page, live_server)
    assert page.locator("nav a:has-text('Team sync') .nav-badge").inner_text().startswith("2")
    card = " ".join(page.locator("#waiting-conflicts").inner_text().split())
    assert card == "1 team sync conflicts"
    both("trust-09-waiting", "#waiting")
    page.click("#waiting-conflicts")
    page.click("#conflicts a")
    page.wait_for_load_state()
    page.wait_for_selector("#between table.diff")
    assert page.locator("#between tr.del mark").all_inner_texts() == ["2026-03-06"]
    assert page.locator("#between tr.add mark").all_inner_texts() == ["2026-03-12"]
    assert page.locator("#between tr.add").last.inner_text().endswith("Ask Dora first.")
    both("trust-10-conflict-diff")
    page.click("button:has-text('Keep theirs')")
    page.wait_for_selector("#confirm")
    assert page.locator("#confirm h2").inner_text() == "Keep theirs?"
    both("trust-11-conflict-confirm")


def test_bulk_select_export_and_import(live_server, page, both, private_dir, alice, tmp_path):
    store = private_store()
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/")
    page.check("input[name=paths][value='user_role.md']")
    page.check("input[name=paths][value='feedback_tests.md']")
    with page.expect_download() as download:
        page.click("#bulk-form button:has-text('Export')")
    exported = zipfile.ZipFile(download.value.path())
    assert sorted(exported.namelist()) == ["MEMORY.md", "feedback_tests.md", "user_role.md"]
    both("trust-12-bulk")
    page.click("#bulk-form button:has-text('Forget…')")
    assert page.locator("h1").inner_text() == "Forget 2 memories?"
    both("trust-13-bulk-forget-asks")
    page.click("button:has-text('Forget them')")
    page.wait_for_url(f"{live_server.url}/stores/{store.pk}/")
    assert not (private_dir / "user_role.md").exists()

    bad = io.BytesIO()
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("user_role.md", exported.read("user_role.md"))
        archive.writestr("../escape.md", "x")
        archive.writestr("notes.txt", "x")
    upload = tmp_path / "memory.zip"
    upload.write_bytes(bad.getvalue())
    page.click("a.button:has-text('Import')")
    page.set_input_files("#id_archive", str(upload))
    page.click("button:has-text('Check and import')")
    page.wait_for_selector("#problems")
    assert page.locator("#problems h2").inner_text() == (
        "2 files did not pass: nothing was imported"
    )
    assert not (private_dir / "user_role.md").exists()
    both("trust-14-import-refused")
    page.set_input_files("#id_archive", str(upload))
    page.check("#id_skip_failing")
    page.click("button:has-text('Check and import')")
    page.wait_for_url(f"{live_server.url}/stores/{store.pk}/")
    assert page.locator(".message.success").inner_text() == (
        "Imported 1 memory; 2 skipped: ../escape.md, notes.txt."
    )
    assert (private_dir / "user_role.md").read_bytes() == exported.read("user_role.md")


def test_members_password_and_tokens(live_server, page, both, private_dir, alice, bob):
    project = Project.objects.get()
    log_in(page, live_server)
    page.click("nav summary:has-text('More')")
    page.click("nav a:has-text('Projects')")
    page.click(f"text={project}")
    page.select_option("#id_user", label="bob")
    page.click("button:has-text('Add')")
    assert page.locator(".message.success").inner_text() == f"bob is now a member of {project}."
    both("trust-15-members")
    page.click("button[aria-label='Remove bob']")
    assert page.locator("h1").inner_text() == f"Remove bob from {project}?"  # it asks first
    assert project.members.filter(pk=bob.pk).exists()
    page.click("button:has-text('Remove bob')")
    page.wait_for_selector(".message.success")
    assert not project.members.filter(pk=bob.pk).exists()

    _, token = do_create_api_token(alice, "laptop")
    page.click("nav summary:has-text('More')")
    page.click("nav a:has-text('API tokens')")
    page.click("a[aria-label='Revoke laptop']")
    assert page.locator("h1").inner_text() == "Revoke the token “laptop”?"
    both("trust-16-revoke-asks")
    page.click("button:has-text('Revoke this token')")
    page.click("button[aria-label='Reinstate laptop']")
    assert (
        page.locator(".message.success").inner_text()
        == "Reinstated token 'laptop': it works again."
    )
    both("trust-17-tokens")

    page.click("a.who")
    page.fill("#id_old_password", PASSWORD)
    page.fill("#id_new_password1", "a much longer passphrase 42")
    page.fill("#id_new_password2", "a much longer passphrase 42")
    both("trust-18-password")
    page.click("button:has-text('Change my password')")
    assert page.locator("h1").inner_text() == "Password changed"
    alice.refresh_from_db()
    assert alice.check_password("a much longer passphrase 42")
