"""The team sync pages: /sync/ (status, pending, suppressed banner, blocked files, conflicts,
history, "Sync now") and /sync/conflicts/<id>/ (base / ours / theirs, keep one or merge)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from memapp.stores.actions import do_save_memory
from teamsync.models import TeamConflict, TeamSyncStatus
from teamsync.service import AlreadyResolved, do_resolve_conflict, do_sync_team
from tests.memdir.test_secret_rules import fake_tokens
from tests.teamsync.gitutil import git, memory, tip_files

pytestmark = pytest.mark.django_db


def text(response) -> str:
    """The page as a person reads it: tags dropped, entities decoded, whitespace collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def section(response, element_id: str) -> str:
    html = response.content.decode()
    match = re.search(rf'<section[^>]*id="{element_id}"[^>]*>(.*?)</section>', html, re.S)
    assert match, f"no #{element_id} on the page"
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", match.group(1))).split())


def story(response) -> list[str]:
    """The history's sentences, newest first, without their times."""
    lines = re.findall(r"</span> ([^<]*)</li>", response.content.decode())
    return [unescape(line) for line in lines]


def pre(response, element_id: str) -> str:
    match = re.search(
        rf'<pre class="version" id="{element_id}">(.*?)</pre>', response.content.decode(), re.S
    )
    return unescape(match.group(1)) if match else ""


def test_the_page_needs_a_login(client):
    response = client.get(reverse("sync"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_it_shows_the_remote_the_stores_and_what_is_pending(client, team_store, alice, remote):
    client.force_login(alice)
    page = text(client.get(reverse("sync")))
    assert f"Remote {remote}" in page
    assert "Last pull never" in page and "Last push never" in page
    assert "Pending nothing" in page
    assert "acme/app · team ↔ acme/app/" in page

    do_save_memory(
        team_store, alice, name="Deploy", description="d", memory_type="project", body="x\n"
    )
    page = text(client.get(reverse("sync")))
    assert "changes waiting to be pushed" in page
    do_sync_team()
    page = text(client.get(reverse("sync")))
    assert "Pending nothing" in page
    assert "Last push 0 minutes ago" in page


def test_credentials_in_the_remote_url_are_never_shown(client, team_store, charlie, settings):
    token = fake_tokens(12)["github-pat"]
    settings.MEMHUB_TEAM_REMOTE = f"https://memhub-bot:{token}@git.acme.test/acme/team-memory.git"
    client.force_login(charlie)
    html = client.get(reverse("sync")).content.decode()
    assert token not in html
    assert "git.acme.test/acme/team-memory.git" in html


def test_sync_now_is_post_only_and_only_asks_the_worker(client, team_store, alice, remote):
    client.force_login(alice)
    assert client.get(reverse("sync_now")).status_code == 405
    assert TeamSyncStatus.get().requested_at is None
    response = client.post(reverse("sync_now"), follow=True)
    assert response.redirect_chain == [(reverse("sync"), 302)]
    assert TeamSyncStatus.get().requested_at is not None
    page = text(response)
    assert "Sync requested" in page and "sync requested" in page
    # Nothing ran in the request: the worker does it.
    assert TeamSyncStatus.get().last_pull_at is None
    assert git(remote, "for-each-ref") == ""


def test_a_suppressed_push_is_shown_prominently(client, team_store, alice, settings, tmp_path):
    settings.MEMHUB_TEAM_REMOTE = str(tmp_path / "gone.git")
    do_save_memory(
        team_store, alice, name="Deploy", description="d", memory_type="project", body="x\n"
    )
    do_sync_team()
    client.force_login(alice)
    banner = section(client.get(reverse("sync")), "suppressed")
    assert "Pushing is stopped" in banner
    assert "gone.git" in banner and "does not appear to be a git repository" in banner


def test_blocked_files_show_the_rule_and_line_but_never_the_value(
    client, team_store, alice, bob, charlie, remote
):
    token = fake_tokens(8)["anthropic-api-key"]
    password = "hunterfoo-but-longer"  # a value only detect-secrets' keyword plugin flags
    password_line = f'password = "{password}"'
    root = Path(team_store.path)
    (root / "reference_llm.md").write_text(memory("LLM", f"Key for CI:\n{token}\n"))
    (root / "reference_db.md").write_text(memory("DB", f"{password_line}\n"))
    head = memory("Dump", "")
    (root / "reference_dump.md").write_text(head + "z" * 250_001)
    do_sync_team()

    client.force_login(bob)
    response = client.get(reverse("sync"))
    blocked = section(response, "blocked")
    assert "Blocked files (3)" in blocked
    assert (
        "reference_llm.md acme/app contains a secret Anthropic API key ( anthropic-api-key )"
        ", line 7" in blocked
    )
    assert (
        "reference_db.md acme/app contains a secret Secret Keyword ( detect-secrets:Secret "
        "Keyword ), line 6" in blocked
    )
    assert "reference_dump.md acme/app over the size cap (250,000 bytes)" in blocked
    html = response.content.decode()
    assert token not in html and token[14:40] not in html
    assert password not in html
    # The history says what was skipped, without paths or values.
    history = section(response, "history")
    assert (
        "Kept 2 files back in acme/app: what looks like a secret (anthropic-api-key, "
        "detect-secrets:Secret Keyword)" in history
    )
    assert "Pushed" in history
    assert "reference_llm.md" not in history

    client.force_login(charlie)  # not a member: sees none of it
    response = client.get(reverse("sync"))
    assert "Blocked files (0)" in section(response, "blocked")
    assert "what looks like a secret" not in response.content.decode()


def test_the_history_tells_each_sync_in_a_sentence(client, team_store, alice, remote):
    do_save_memory(
        team_store, alice, name="Deploy", description="d", memory_type="project", body="x\n"
    )
    do_sync_team()
    do_sync_team(push=False)
    client.force_login(alice)
    rows = story(client.get(reverse("sync")))
    assert rows == ["Pulled: nothing new", "Pushed 2 changes", "Pulled: nothing new"]


def test_pulls_that_bring_nothing_fold_into_one_line(client, team_store, alice, dora, remote):
    do_sync_team()
    do_sync_team()
    dora.write("reference_oncall.md", memory("On-call", "Dora carries the pager.\n"))
    dora.sync()
    do_sync_team()
    for _ in range(3):
        do_sync_team()
    client.force_login(alice)
    rows = story(client.get(reverse("sync")))
    assert rows == [
        "3 pulls, nothing new",
        "Pulled 1 change from dora",
        "Pulled: nothing new",
        "Pushed: no memory changed",  # the shared repository's first commit
        "Pulled: nothing new",
    ]


# --- conflicts ---------------------------------------------------------------------------------


@pytest.fixture
def conflict(team_store, alice, dora, remote) -> TeamConflict:
    body = "Ship on Tuesdays.\n"
    file = do_save_memory(
        team_store, alice, name="Deploy", description="d", memory_type="project", body=body
    )
    do_sync_team()
    dora.pull()
    dora.write(file.path, dora.read(file.path).replace("Tuesdays", "Wednesdays <dora>"))
    dora.sync()
    do_save_memory(
        team_store,
        alice,
        name="Deploy",
        description="d",
        memory_type="project",
        body="Ship on Thursdays & Fridays.\n",
        path=file.path,
    )
    do_sync_team()
    return TeamConflict.objects.get()


def test_the_sync_page_links_open_conflicts(client, conflict, alice):
    client.force_login(alice)
    response = client.get(reverse("sync"))
    conflicts = section(response, "conflicts")
    assert "Conflicts to resolve (1)" in conflicts
    assert "project_deploy.md in acme/app — both sides edited" in conflicts
    assert reverse("sync_conflict", args=[conflict.pk]) in response.content.decode()


def test_a_member_sees_base_ours_and_theirs(client, conflict, bob):
    client.force_login(bob)
    response = client.get(reverse("sync_conflict", args=[conflict.pk]))
    assert response.status_code == 200
    assert pre(response, "base") == conflict.base and "Tuesdays" in conflict.base
    assert pre(response, "ours") == conflict.ours and "Thursdays & Fridays" in conflict.ours
    assert pre(response, "theirs") == conflict.theirs and "Wednesdays <dora>" in conflict.theirs
    page = text(response)
    assert "Keep ours" in page and "Keep theirs" in page and "Save the merge" in page
    assert "Delete it" not in page  # both sides still have the file


def test_others_get_a_404_and_change_nothing(client, conflict, charlie):
    client.force_login(charlie)
    url = reverse("sync_conflict", args=[conflict.pk])
    assert client.get(url).status_code == 404
    assert client.post(url, {"choice": "ours"}).status_code == 404
    conflict.refresh_from_db()
    assert conflict.resolved_at is None
    assert client.get(reverse("sync_conflict", args=[conflict.pk + 1000])).status_code == 404


@pytest.mark.parametrize("choice", ["ours", "theirs"])
def test_keeping_one_side_resolves_it_and_the_next_sync_publishes_it(
    client, conflict, bob, team_store, remote, choice
):
    client.force_login(bob)
    url = reverse("sync_conflict", args=[conflict.pk])
    asked = client.post(url, {"choice": choice})
    assert asked.status_code == 200 and f"Keep {choice}?" in text(asked)
    conflict.refresh_from_db()
    assert conflict.resolved_at is None
    response = client.post(url, {"choice": choice, "confirm": "yes"})
    assert response.status_code == 302 and response.url == reverse("sync")
    conflict.refresh_from_db()
    assert conflict.resolved_by == bob and conflict.resolution == choice
    do_sync_team()
    expected = conflict.ours if choice == "ours" else conflict.theirs
    assert tip_files(remote, "acme/app")["project_deploy.md"] == expected
    assert (Path(team_store.path) / "project_deploy.md").read_text() == expected
    page = text(client.get(reverse("sync_conflict", args=[conflict.pk])))
    assert f"Resolved 0 minutes ago by bob: kept {choice}." in page
    assert "Keep ours" not in page
    assert "Conflicts to resolve (0)" in section(client.get(reverse("sync")), "conflicts")


def test_an_edited_merge_is_saved_with_unix_line_endings(client, conflict, alice, remote):
    merged = conflict.ours.replace("Thursdays & Fridays", "Wednesdays or Thursdays")
    client.force_login(alice)
    response = client.post(
        reverse("sync_conflict", args=[conflict.pk]),
        {"choice": "merged", "merged": merged.replace("\n", "\r\n"), "confirm": "yes"},
    )
    assert response.status_code == 302
    do_sync_team()
    assert tip_files(remote, "acme/app")["project_deploy.md"] == merged


def test_a_bad_choice_is_explained_and_nothing_is_resolved(client, conflict, alice):
    client.force_login(alice)
    response = client.post(reverse("sync_conflict", args=[conflict.pk]), {"choice": "both"})
    assert response.status_code == 200
    assert "unknown resolution" in text(response)
    conflict.refresh_from_db()
    assert conflict.resolved_at is None


def test_an_edit_delete_conflict_offers_deleting(client, team_store, alice, dora, remote):
    file = do_save_memory(
        team_store, alice, name="Deploy", description="d", memory_type="project", body="x\n"
    )
    do_sync_team()
    dora.pull()
    dora.delete(file.path)
    dora.sync()
    do_save_memory(
        team_store,
        alice,
        name="Deploy",
        description="d",
        memory_type="project",
        body="y\n",
        path=file.path,
    )
    do_sync_team()
    conflict = TeamConflict.objects.get()
    client.force_login(alice)
    page = text(client.get(reverse("sync_conflict", args=[conflict.pk])))
    assert "(deleted there)" in page and "Delete it" in page and "Keep theirs" not in page
    client.post(
        reverse("sync_conflict", args=[conflict.pk]), {"choice": "delete", "confirm": "yes"}
    )
    do_sync_team()
    assert file.path not in tip_files(remote, "acme/app")
    assert not (Path(team_store.path) / file.path).exists()


def test_old_events_page_through(client, team_store, alice, remote):
    from memapp.stores.events import record_event

    for n in range(1, 61):
        record_event("sync_pull", success=True, files_written=n, not_modified=False, duration_ms=1)
    client.force_login(alice)
    response = client.get(reverse("sync"))
    first = story(response)
    assert "Older →" in text(response) and "← Newer" not in text(response)
    assert first[0] == "Pulled 60 changes" and "Pulled 1 change" not in first
    older = re.search(r'href="\?(older=[0-9-]+)"', response.content.decode())
    second = client.get(reverse("sync") + "?" + older[1])
    assert story(second)[-1] == "Pulled 1 change" and "Older →" not in text(second)


def test_the_history_merges_the_store_s_events_with_the_store_less_ones_in_time(
    client, team_store, alice, remote, monkeypatch
):
    """The page reads its team stores' sync events and the store-less ones apart (each newest
    first from an index), then as one history: in time order across both pages."""
    from memapp.stores.events import record_event
    from memapp.web import keyset

    monkeypatch.setattr(keyset, "WINDOW", 10)  # windows of ten, from each part

    for n in range(1, 31):
        record_event("sync_pull", success=True, files_written=n, not_modified=False, duration_ms=1)
        record_event("entries_capped", team_store.project, store=team_store, dropped_count=n)
    client.force_login(alice)
    response = client.get(reverse("sync"))
    first = story(response)
    expected = [
        line
        for n in range(30, 0, -1)
        for line in (
            f"Kept {n} new file{'s' if n > 1 else ''} back in acme/app: the cap is None memories",
            f"Pulled {n} change{'s' if n > 1 else ''}",
        )
    ]
    assert first == expected[:50]
    older = re.search(r'href="\?(older=[0-9-]+)"', response.content.decode())
    assert story(client.get(reverse("sync") + "?" + older[1])) == expected[50:]


def test_the_conflict_reads_as_a_diff_with_the_changed_words_marked(client, conflict, bob):
    client.force_login(bob)
    html = client.get(reverse("sync_conflict", args=[conflict.pk])).content.decode()
    between = re.search(r'<section class="card" id="between">(.*?)</section>', html, re.S).group(1)
    assert "1 line added · 1 line removed" in " ".join(
        unescape(re.sub("<[^>]+>", " ", between)).split()
    )
    assert "Ship on <mark>Thursdays &amp; Fridays</mark>." in between
    assert "Ship on <mark>Wednesdays &lt;dora&gt;</mark>." in between


def test_a_merge_is_shown_as_what_it_changes_before_it_is_saved(client, conflict, alice):
    merged = conflict.ours.replace("Thursdays & Fridays", "Wednesdays or Thursdays")
    client.force_login(alice)
    asked = client.post(
        reverse("sync_conflict", args=[conflict.pk]), {"choice": "merged", "merged": merged}
    )
    html = asked.content.decode()
    assert "Save the merge?" in text(asked)
    assert "Ship on Thursdays <mark>&amp; Fridays</mark>." in html  # what goes
    assert "Ship on <mark>Wednesdays or</mark> Thursdays." in html  # what comes
    assert f'<input type="hidden" name="merged" value="{merged.replace("&", "&amp;")}' in html
    conflict.refresh_from_db()
    assert conflict.resolved_at is None


def test_keep_ours_keeps_what_the_store_holds_now_and_their_side_stays_in_the_history(
    client, conflict, alice, team_store, remote
):
    path = Path(team_store.path) / "project_deploy.md"
    later = do_save_memory(  # after the conflict arose: "ours" is this now
        team_store,
        alice,
        name="Deploy",
        description="d",
        memory_type="project",
        body="Ship on Fridays only.\n",
        path="project_deploy.md",
    )
    now = path.read_text()
    assert now != conflict.ours
    client.force_login(alice)
    url = reverse("sync_conflict", args=[conflict.pk])
    page = client.get(url)
    assert "changed after this conflict arose" in text(page)
    assert pre(page, "ours") == now
    asked = text(client.post(url, {"choice": "ours"}))
    assert "Your store already has this text: nothing in it changes." in asked
    client.post(url, {"choice": "ours", "confirm": "yes"})
    assert path.read_text() == now
    do_sync_team()
    assert tip_files(remote, "acme/app")["project_deploy.md"] == now
    history = text(client.get(reverse("memory_history", args=[team_store.pk, later.path])))
    assert "team sync · their side of a team sync conflict, not kept" in history
    assert "alice · the web UI · resolved a team sync conflict: kept ours" in history


def test_keep_ours_on_an_index_keeps_the_store_s_current_lines(client, team_store, alice, remote):
    for name in ("Deploy", "On-call", "Owners"):
        do_save_memory(
            team_store, alice, name=name, description=name, memory_type="project", body="x\n"
        )
    index = Path(team_store.path) / "MEMORY.md"
    three = index.read_text()
    assert len(three.splitlines()) == 3
    stale = "- [Deploy](project_deploy.md) — Deploy\n"
    theirs = "- [Deploy](project_deploy.md) — Deploy\n- [Runbook](reference_runbook.md) — where\n"
    conflict = TeamConflict.objects.create(
        store=team_store, key="MEMORY.md", kind="edit", base=stale, ours=stale, theirs=theirs
    )
    client.force_login(alice)
    url = reverse("sync_conflict", args=[conflict.pk])
    page = client.get(url)
    assert pre(page, "ours") == three
    merge = re.search(
        r'<textarea name="merged" id="id_merged"[^>]*>(.*?)</textarea>', page.content.decode(), re.S
    )
    # Both sides line by line, to start from: ours' lines after the line each follows.
    assert unescape(merge.group(1)) == three + "- [Runbook](reference_runbook.md) — where\n"
    assert "nothing in it changes" in text(client.post(url, {"choice": "ours"}))
    client.post(url, {"choice": "ours", "confirm": "yes"})
    assert index.read_text() == three
    versions = text(client.get(reverse("memory_history", args=[team_store.pk, "MEMORY.md"])))
    assert "their side of a team sync conflict, not kept" in versions


def test_a_conflict_resolved_twice_from_two_tabs_is_said_so_and_loses_nothing(
    client, conflict, alice, bob, team_store
):
    path = Path(team_store.path) / "project_deploy.md"
    url = reverse("sync_conflict", args=[conflict.pk])
    client.force_login(alice)
    client.post(url, {"choice": "ours", "confirm": "yes"})  # the first tab
    second = client.post(url, {"choice": "theirs", "confirm": "yes"}, follow=True)
    page = text(second)
    assert "project_deploy.md was already resolved by alice at" in page
    assert "kept ours. Your choice was not applied; nothing was lost" in page
    assert path.read_text() == conflict.ours
    conflict.refresh_from_db()
    assert conflict.resolution == "ours"
    with pytest.raises(AlreadyResolved):  # a second request that got past the page's check
        do_resolve_conflict(TeamConflict.objects.get(pk=conflict.pk), bob, "theirs")
    assert path.read_text() == conflict.ours
