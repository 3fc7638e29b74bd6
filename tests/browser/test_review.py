"""Reviewing memories in Debian's chromium: log in, open a store, filter, search as you type,
open a memory, edit it, forget one, and watch the index meter; then the same without JavaScript."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Store
from tests.browser.login import log_in
from tests.browser.screens import shoot
from tests.conftest import write_memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def private_dir(memory_base, alice) -> Path:
    """Alice's private store with a few more memories of every type, then discovered."""
    directory = memory_base / "projects" / "-home-alice-app" / "memory"
    write_memory(
        directory,
        "reference_wiki.md",
        "Team wiki",
        "The team wiki lives at wiki.example.com/backend",
        "reference",
        "Runbooks are under **Ops**. See [[Real DB]] and [[deploy-checklist]].\n",
    )
    write_memory(
        directory,
        "feedback_small_prs.md",
        "Small pull requests",
        "Keep pull requests under 400 lines",
        "feedback",
        "Split big changes.\n\n**Why:** reviews stall.\n**How to apply:** every PR.\n",
    )
    write_memory(
        directory,
        "project_migration.md",
        "Postgres migration",
        "Move from MySQL to Postgres by 2026-06-30",
        "project",
        "Owner: Alice.\n\n**Why:** licence costs.\n**How to apply:** new tables in Postgres.\n",
    )
    old = time.time() - 45 * 86_400
    os.utime(directory / "project_migration.md", (old, old))
    with (directory / "MEMORY.md").open("a") as index:
        index.write("- [Team wiki](reference_wiki.md) — where docs live\n")
    discover_local_stores(memory_base)
    return directory


def listed(page) -> list[str]:
    return page.locator("#memory-list a.title").all_inner_texts()


def mark_document(page) -> None:
    """A flag that a full page load would wipe out."""
    page.evaluate("window.__sameDocument = true")


def same_document(page) -> bool:
    return page.evaluate("window.__sameDocument === true")


def test_reviewing_a_store_end_to_end(live_server, page, screenshot, private_dir, alice):
    store = Store.objects.get(kind="private")
    log_in(page, live_server)
    page.click("table.stores a:has-text('private')")
    page.wait_for_url(f"{live_server.url}/stores/{store.pk}/")
    assert page.locator("#line-meter .value").inner_text() == "3 / 200"
    assert page.locator("#memory-list .summary").inner_text() == "5 memories"
    assert (
        page.locator("pre.index")
        .inner_text()
        .endswith("- [Team wiki](reference_wiki.md) — where docs live")
    )
    screenshot("review-01-store")

    mark_document(page)
    page.select_option("select[name=type]", "feedback")
    page.wait_for_url("**type=feedback**")
    expect(page.locator("#memory-list a.title")).to_have_count(2)
    assert sorted(listed(page)) == ["Real DB", "Small pull requests"]
    assert same_document(page)
    screenshot("review-02-filter-type")

    page.select_option("select[name=type]", "")
    expect(page.locator("#memory-list a.title")).to_have_count(5)
    page.locator("input[name=q]").press_sequentially("runbooks", delay=40)
    expect(page.locator("#memory-list a.title")).to_have_count(1)
    assert listed(page) == ["Team wiki"]  # found by a word of its body
    assert page.locator("#memory-list .summary").inner_text() == "1 memory"
    assert same_document(page)
    assert "q=runbooks" in page.url
    screenshot("review-03-search")

    page.click("#memory-list a.title")
    page.wait_for_url("**/m/reference_wiki.md")
    assert page.locator("h1").inner_text() == "Team wiki"
    assert page.locator("pre.agent-header").inner_text() == (
        "Memory (saved today): reference_wiki.md:"
    )
    assert page.locator(".markdown a.wikilink").inner_text() == "Real DB"
    assert page.locator(".markdown .wikilink.missing").inner_text() == "deploy-checklist"
    screenshot("review-04-memory")

    page.click("a.button:has-text('Edit')")
    page.wait_for_url("**/m/reference_wiki.md/edit/")
    index_before = (private_dir / "MEMORY.md").read_bytes()
    assert page.get_by_label("Index line").input_value() == (
        "- [Team wiki](reference_wiki.md) — where docs live"
    )
    page.fill("#id_description", "The team wiki moved to docs.example.com")
    page.fill("#id_body", "Runbooks are under **Ops**.\nSee [[Real DB]].\n")
    screenshot("review-05-edit")
    page.click("button:has-text('Save')")
    page.wait_for_url("**/m/reference_wiki.md")
    assert page.locator(".message.success").inner_text() == "Saved reference_wiki.md."
    assert (private_dir / "reference_wiki.md").read_text() == (
        "---\nname: Team wiki\ndescription: The team wiki moved to docs.example.com\n"
        "type: reference\n---\nRunbooks are under **Ops**.\nSee [[Real DB]].\n"
    )
    # The curated index line was not touched on the form: MEMORY.md is byte for byte the same.
    assert (private_dir / "MEMORY.md").read_bytes() == index_before
    screenshot("review-06-saved")

    page.click("a.button:has-text('Forget')")
    page.wait_for_url("**/m/reference_wiki.md/forget/")
    assert page.locator("h1").inner_text() == "Forget “Team wiki”?"
    screenshot("review-07-forget")
    page.click("button:has-text('Forget this memory')")
    page.wait_for_url(f"{live_server.url}/stores/{store.pk}/")
    assert not (private_dir / "reference_wiki.md").exists()
    assert "reference_wiki.md" not in (private_dir / "MEMORY.md").read_text()
    assert page.locator("#line-meter .value").inner_text() == "2 / 200"
    assert page.locator("#memory-list .summary").inner_text() == "4 memories"
    assert "Team wiki" not in listed(page)
    screenshot("review-08-forgotten")


def test_warnings_appear_while_typing_and_save_anyway_saves(
    live_server, page, screenshot, private_dir, alice
):
    store = Store.objects.get(kind="private")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/new/?type=project")
    page.fill("#id_name", "Launch")
    page.fill("#id_description", "Public launch")
    page.locator("#id_body").press_sequentially("We launch next Tuesday.", delay=10)
    # Leaving the description already asked for warnings; typing asks again after a pause.
    page.wait_for_selector("#warnings li:has-text('next Tuesday')")
    assert page.locator("#warnings li").all_inner_texts() == [
        "Missing **Why:** — project memories should say why (an incident, a preference).",
        "Missing **How to apply:** — project memories should say when and where it applies.",
        'Relative date "next Tuesday": project memories must use absolute dates (e.g. 2026-03-05).',
    ]
    screenshot("review-09-live-warnings")
    page.click("button:has-text('Save')")
    page.wait_for_selector("button:has-text('Save anyway')")
    assert not (private_dir / "project_launch.md").exists()
    page.click("button:has-text('Save anyway')")
    page.wait_for_url("**/m/project_launch.md")
    assert (private_dir / "project_launch.md").read_text().endswith("---\nWe launch next Tuesday.")


def test_an_old_memory_carries_the_agents_staleness_note(
    live_server, page, screenshot, private_dir, alice
):
    store = Store.objects.get(kind="private")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/m/project_migration.md")
    assert page.locator(".staleness").inner_text().startswith("This memory is 45 days old.")
    assert page.locator("pre.agent-header").inner_text() == "Memory: project_migration.md:"
    screenshot("review-10-old-memory")


def test_a_truncated_index_shows_the_agents_warning(
    live_server, page, screenshot, private_dir, alice
):
    lines = [f"- [Memory {n}](memory_{n}.md) — a hook for memory {n}" for n in range(1, 251)]
    (private_dir / "MEMORY.md").write_text("\n".join(lines) + "\n")
    store = Store.objects.get(kind="private")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/")
    assert page.locator("#line-meter .value").inner_text() == "250 / 200"
    warning = (
        "> WARNING: MEMORY.md is 250 lines (limit: 200). Only part of it was loaded. Keep index "
        "entries to one line under ~200 chars; move detail into topic files."
    )
    assert page.locator("pre.index").inner_text().endswith(warning)
    assert warning in page.locator("#index p.error").inner_text()  # seen without scrolling
    screenshot("review-11-truncated-index")


def test_the_health_page_and_rebuilding_index_entries(
    live_server, page, screenshot, private_dir, alice
):
    write_memory(
        private_dir,
        "feedback_pr_size.md",
        "PR size",
        "Keep pull-requests under 400 lines!",
        "feedback",
        "**Why:** x\n**How to apply:** y\n",
    )
    write_memory(
        private_dir, "project_demo.md", "Demo", "Customer demo", "project", "Demo next sprint.\n"
    )
    (private_dir / "broken.md").write_text("---\njust a sentence\n---\nBody.\n")
    with (private_dir / "MEMORY.md").open("a") as index:
        index.write("- [Gone](gone.md) — deleted long ago\n")
        index.write("- [Long](feedback_tests.md) — " + "a very long hook " * 14 + "\n")
    store = Store.objects.get(kind="private")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/")
    page.click("form:has(button:has-text('Rescan')) button")
    assert page.locator(".message.success").inner_text() == (
        "Rescanned: 3 new, 0 changed, 0 removed, 5 unchanged."
    )
    page.click("a.button:has-text('Health')")
    page.wait_for_url("**/health/")
    headings = page.locator("h2, h3").all_inner_texts()
    assert headings == [
        "Index (MEMORY.md)",
        "Entries pointing to missing files (1)",
        "Files not in the index (5)",
        "Over-long entries (1)",
        "Near-duplicate memories (1)",
        "Project memories with relative dates (1)",
        "Missing Why / How to apply (2)",
        "Broken frontmatter (1)",
        "Links to memories not written yet (1)",
    ]
    screenshot("review-12-health")
    before = (private_dir / "MEMORY.md").read_bytes()
    page.click("button:has-text('Rebuild index entries')")
    page.wait_for_selector(".message.success")
    assert page.locator(".message.success").inner_text() == "Added 5 index entries."
    after = (private_dir / "MEMORY.md").read_bytes()
    assert after.startswith(before)
    assert after[len(before) :].decode().splitlines() == [
        "- [broken](broken.md)",
        "- [PR size](feedback_pr_size.md) — Keep pull-requests under 400 lines!",
        "- [Small pull requests](feedback_small_prs.md) — Keep pull requests under 400 lines",
        "- [Demo](project_demo.md) — Customer demo",
        "- [Postgres migration](project_migration.md) — Move from MySQL to Postgres by 2026-06-30",
    ]
    assert page.locator("h3:has-text('Files not in the index')").inner_text() == (
        "Files not in the index (0)"
    )
    screenshot("review-13-health-rebuilt")


def test_a_conflict_shows_what_differs(live_server, page, screenshot, private_dir, alice):
    store = Store.objects.get(kind="private")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/stores/{store.pk}/m/feedback_small_prs.md/edit/")
    theirs = (private_dir / "feedback_small_prs.md").read_text() + "An agent added this.\n"
    (private_dir / "feedback_small_prs.md").write_text(theirs)
    page.fill("#id_description", "Keep pull requests under 300 lines")
    page.click("button:has-text('Save')")
    page.wait_for_load_state()
    page.wait_for_selector("text=This memory changed while you were editing")
    # What saving mine would change on disk: the agent's line goes, 400 becomes 300.
    assert page.locator("table.diff tr.del mark").all_inner_texts() == ["400"]
    assert page.locator("table.diff tr.add mark").all_inner_texts() == ["300"]
    assert "An agent added this." in page.locator("table.diff tr.del").last.inner_text()
    assert (private_dir / "feedback_small_prs.md").read_text() == theirs
    screenshot("review-14-conflict")
    page.click("button:has-text('Replace the version on disk with mine')")
    page.wait_for_url("**/m/feedback_small_prs.md")
    assert "description: Keep pull requests under 300 lines\n" in (
        (private_dir / "feedback_small_prs.md").read_text()
    )


def test_the_review_works_without_javascript(live_server, browser, private_dir, alice):
    store = Store.objects.get(kind="private")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        log_in(page, live_server)
        page.goto(f"{live_server.url}/stores/{store.pk}/")
        page.select_option("select[name=type]", "feedback")
        page.click("form.filters button:has-text('Filter')")
        page.wait_for_url("**type=feedback**")
        assert sorted(listed(page)) == ["Real DB", "Small pull requests"]
        page.fill("input[name=q]", "reviews stall")
        page.select_option("select[name=type]", "")
        page.click("form.filters button:has-text('Filter')")
        page.wait_for_url("**q=reviews+stall**")
        assert listed(page) == ["Small pull requests"]
        shoot(page, "review-nojs-01-filtered")

        page.click("#memory-list a.title")
        page.click("a.button:has-text('Edit')")
        page.fill("#id_description", "Keep pull requests under 200 lines")
        page.click("button:has-text('Save')")
        page.wait_for_url("**/m/feedback_small_prs.md")
        assert page.locator(".message.success").inner_text() == "Saved feedback_small_prs.md."
        assert "description: Keep pull requests under 200 lines\n" in (
            (private_dir / "feedback_small_prs.md").read_text()
        )
        shoot(page, "review-nojs-02-saved")

        page.click("a.button:has-text('Forget')")
        page.click("button:has-text('Forget this memory')")
        page.wait_for_url(f"{live_server.url}/stores/{store.pk}/")
        assert not (private_dir / "feedback_small_prs.md").exists()
        assert page.locator("#memory-list .summary").inner_text() == "4 memories"
        shoot(page, "review-nojs-03-forgotten")
    finally:
        context.close()
