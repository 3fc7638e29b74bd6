"""The snapshot pages: the pending list, registering checkouts, reviewing and deciding."""

from __future__ import annotations

import json
import re
import secrets
import string

import pytest

from memapp.memdir.agent_snapshots import MARKER_FILENAME, snapshot_status
from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Event, Store
from snapshots.models import Checkout, SnapshotDecision
from snapshots.targets import targets_for_user
from tests.snapshots.conftest import (
    LOCAL,
    SLUG,
    SNAPSHOT,
    T1,
    T2,
    mark,
    review_url,
    topic,
    write_files,
    write_snapshot,
)

pytestmark = pytest.mark.django_db


def fingerprint(client, url: str) -> str:
    html = client.get(url).content.decode()
    return re.search(r'name="fingerprint" value="([0-9a-f]+)"', html).group(1)


def decide(client, url: str, decision: str, files=(), fp: str | None = None):
    data = {"decision": decision, "fingerprint": fp or fingerprint(client, url), "files": files}
    data["confirm"] = "yes"  # replace asks first; the tests of that are below
    return client.post(url, data, follow=True)


def files_of(directory) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir()) if p.is_file()}


# --- the list -----------------------------------------------------------------------------------


def test_the_list_shows_a_pending_update_with_its_reason(client, alice, checkout):
    client.force_login(alice)
    response = client.get("/snapshots/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Waiting for your decision (1)" in html
    assert review_url(checkout) in html
    assert f"the snapshot ({T2}) is newer than the last sync ({T1})" in html


def test_the_list_shows_an_invalid_snapshot_with_the_reason(client, alice, checkout, repo):
    write_files(repo / ".claude" / "agent-memory-snapshots" / "tester", {"a.md": topic("A", "a")})
    (repo / ".claude" / "agent-memory-snapshots" / "tester" / "snapshot.json").write_text("{}")
    client.force_login(alice)
    html = client.get("/snapshots/").content.decode()
    assert "Snapshots that cannot be used (1)" in html
    assert "snapshot.json has no updatedAt" in html
    assert "Waiting for your decision (1)" in html  # the reviewer's update only


def test_an_agent_without_local_memory_is_offered_initialize(client, alice, checkout, repo):
    write_snapshot(repo, "tester", T2, {"a.md": topic("A", "a")})
    client.force_login(alice)
    html = client.get("/snapshots/").content.decode()
    assert "Waiting for your decision (2)" in html
    assert review_url(checkout, agent="tester") in html
    assert "no local memory yet" in html


def test_nothing_is_pending_once_synced(client, alice, checkout, user_memory):
    mark(user_memory, T2)
    client.force_login(alice)
    assert "Nothing to decide." in client.get("/snapshots/").content.decode()


# --- checkouts ----------------------------------------------------------------------------------


def test_the_local_owner_registers_a_checkout_and_its_agent_stores(
    client, alice, repo, user_memory
):
    write_files(repo / ".claude" / "agent-memory" / "reviewer", {"p.md": topic("P", "p")})
    write_files(repo / ".claude" / "agent-memory-local" / "reviewer", {"l.md": topic("L", "l")})
    client.force_login(alice)
    response = client.post("/snapshots/checkouts/", {"path": str(repo)}, follow=True)
    assert f"Registered {repo} as a checkout of {SLUG}." in response.content.decode()
    checkout = Checkout.objects.get()
    assert (checkout.owner, checkout.origin, checkout.project.key) == (alice, "host", SLUG)
    stores = Store.objects.filter(project=checkout.project, kind="agent").order_by("agent_scope")
    assert [(s.agent_scope, s.owner, s.file_count) for s in stores] == [
        ("local", alice, 1),
        ("project", alice, 1),
    ]
    for store in stores:
        assert client.get(f"/stores/{store.pk}/").status_code == 200
    scopes = [t.scope for t in targets_for_user(alice)]
    assert scopes == ["user", "project", "local"]  # each scope has its own status


def test_discovery_keeps_the_stores_of_registered_checkouts(alice, repo, user_memory):
    from snapshots.actions import do_register_checkout

    write_files(repo / ".claude" / "agent-memory" / "reviewer", {"p.md": topic("P", "p")})
    do_register_checkout(alice, repo)
    discover_local_stores(user_memory.parent.parent)
    assert Store.objects.filter(agent_scope="project").count() == 1
    assert Store.objects.filter(agent_scope="user", path=str(user_memory)).exists()


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("relative/path", "Give an absolute path"),
        ("/no/such/dir/anywhere", "There is no such directory on this host."),
    ],
)
def test_registering_checks_the_path(client, alice, path, error):
    client.force_login(alice)
    response = client.post("/snapshots/checkouts/", {"path": path})
    assert error in response.content.decode()
    assert not Checkout.objects.exists()


def test_a_checkout_is_registered_once(client, alice, checkout, repo):
    client.force_login(alice)
    response = client.post("/snapshots/checkouts/", {"path": str(repo) + "/"})
    assert "This checkout is already registered." in response.content.decode()


def test_only_the_local_owner_registers_paths_on_this_host(client, alice, bob, repo):
    client.force_login(bob)
    assert client.post("/snapshots/checkouts/", {"path": str(repo)}).status_code == 404
    html = client.get("/snapshots/").content.decode()
    assert "Paths on this host belong to its local owner." in html
    assert not Checkout.objects.exists()


def test_removing_a_checkout_forgets_its_stores_and_keeps_its_files(client, alice, checkout, repo):
    write_files(repo / ".claude" / "agent-memory" / "reviewer", {"p.md": topic("P", "p")})
    client.force_login(alice)
    client.post(f"/snapshots/checkouts/{checkout.pk}/rescan/")
    assert Store.objects.filter(agent_scope="project").count() == 1
    client.post(f"/snapshots/checkouts/{checkout.pk}/remove/")
    assert not Checkout.objects.exists()
    assert not Store.objects.filter(agent_scope="project").exists()
    assert (repo / ".claude" / "agent-memory" / "reviewer" / "p.md").exists()
    assert (repo / ".claude" / "agent-memory-snapshots" / "reviewer" / "snapshot.json").exists()


# --- the review page ----------------------------------------------------------------------------


def test_the_review_shows_each_file_and_the_checks(client, alice, checkout, repo):
    token = "ghp_" + "".join(
        secrets.choice(string.ascii_letters + string.digits) for _ in range(36)
    )
    snapshot = repo / ".claude" / "agent-memory-snapshots" / "reviewer"
    (snapshot / "leak.md").write_text(topic("Leak", "a token", body=f"token: {token}\n"))
    (snapshot / "%2e%2e%2fevil.md").write_text("evil")
    client.force_login(alice)
    html = client.get(review_url(checkout)).content.decode()
    assert "update available" in html
    assert "6 files: 4 added or changed, 1 only local, 1 unchanged." in html
    # frontmatter changes, field by field
    assert re.search(
        r"<code>description</code></th><td class=\"old\"[^>]*>Tests hit a database", html
    )
    assert "Integration tests hit a real database</td>" in html
    # the body diff, side by side
    assert '<td class="text left">Use a database.</td>' in html
    assert '<td class="text right">Use the real database.</td>' in html
    # checks: the secret by rule and line only, the hostile name refused
    assert "leak.md</code>, line 6: GitHub personal access token" in html
    assert token not in html
    assert "%2e%2e%2fevil.md</code>: URL-decoding or NFKC normalisation" in html
    assert "replace deletes it" in html  # mine.md
    assert 'value="leak.md"' in html and 'value="leak.md" disabled' in html


def test_merge_applies_the_ticked_files_and_records_the_decision(
    client, alice, checkout, user_memory
):
    client.force_login(alice)
    url = review_url(checkout)
    response = decide(client, url, "merge", ["flaky.md"])
    html = response.content.decode()
    assert "Done: merge the ticked files — 1 file written, 0 removed, 1 index line added" in html
    assert files_of(user_memory) == {
        MARKER_FILENAME: json.dumps({"syncedFrom": T2}),
        "MEMORY.md": LOCAL["MEMORY.md"] + "- [Flaky](flaky.md) — flaky tests\n",
        "flaky.md": SNAPSHOT["flaky.md"],
        "mine.md": LOCAL["mine.md"],
        "style.md": LOCAL["style.md"],
        "tests.md": LOCAL["tests.md"],  # not ticked: kept
    }
    decision = SnapshotDecision.objects.get()
    assert (decision.decision, decision.updated_at, decision.decided_by) == ("merge", T2, alice)
    assert list(decision.files) == ["flaky.md"] and decision.applied_at is not None
    assert decision.store.path == str(user_memory)
    event = Event.objects.get(kind="snapshot_decision")
    assert event.fields == {
        "agent_type": "reviewer",
        "scope": "user",
        "decision": "merge",
        "updated_at": T2,
    }
    assert event.user == alice
    assert "in sync" in html and "Decisions for this agent memory" in html
    assert "Nothing to decide." in client.get("/snapshots/").content.decode()


def test_keep_writes_only_the_marker(client, alice, checkout, user_memory):
    client.force_login(alice)
    before = files_of(user_memory)
    decide(client, review_url(checkout), "keep", ["tests.md"])
    after = files_of(user_memory)
    assert after.pop(MARKER_FILENAME) == json.dumps({"syncedFrom": T2})
    before.pop(MARKER_FILENAME)
    assert after == before


def test_replace_makes_the_md_files_the_snapshots(client, alice, checkout, user_memory):
    (user_memory / "notes.txt").write_text("kept")
    client.force_login(alice)
    decide(client, review_url(checkout), "replace")
    assert files_of(user_memory) == {
        MARKER_FILENAME: json.dumps({"syncedFrom": T2}),
        "notes.txt": "kept",
        **SNAPSHOT,
    }
    assert SnapshotDecision.objects.get().result["removed"] == ["mine.md"]


def test_replace_asks_first_and_its_losses_can_be_restored(client, alice, checkout, user_memory):
    from memapp.stores.history import timeline
    from memapp.stores.models import TrashItem

    client.force_login(alice)
    url = review_url(checkout)
    asked = client.post(url, {"decision": "replace", "fingerprint": fingerprint(client, url)})
    page = asked.content.decode()
    assert "Replace the local memory of <code>reviewer</code> with the snapshot?" in page
    assert "<li><code>mine.md</code></li>" in page and "<li><code>tests.md</code></li>" in page
    assert (user_memory / "mine.md").exists() and not SnapshotDecision.objects.exists()
    decide(client, url, "replace")
    store = Store.objects.get(path=str(user_memory))
    item = TrashItem.objects.get(store=store)
    assert (item.path, item.via, item.deleted_by) == ("mine.md", "snapshot", alice)
    [new, old] = timeline(store, "tests.md")
    assert (new.via, old.via) == ("snapshot", "disk")
    assert new.note == f"replace from the snapshot of {T2}"


def test_initialize_creates_the_agent_memory_and_its_store(client, alice, checkout, repo):
    write_snapshot(repo, "tester", T2, {"MEMORY.md": "- [A](a.md) — a\n", "a.md": topic("A", "a")})
    client.force_login(alice)
    url = review_url(checkout, agent="tester")
    assert "Initialize" in client.get(url).content.decode()
    decide(client, url, "initialize")
    target = checkout.memory_dir("tester", "user")
    assert sorted(p.name for p in target.iterdir()) == [MARKER_FILENAME, "MEMORY.md", "a.md"]
    store = Store.objects.get(path=str(target))
    assert (store.owner, store.agent_scope, store.file_count) == (alice, "user", 1)


def test_dismiss_changes_nothing_and_comes_back_with_the_next_snapshot(
    client, alice, checkout, repo, user_memory
):
    client.force_login(alice)
    before = files_of(user_memory)
    decide(client, review_url(checkout), "dismiss")
    assert files_of(user_memory) == before
    assert "Nothing to decide." in client.get("/snapshots/").content.decode()
    assert SnapshotDecision.objects.get().applied_at is None
    write_snapshot(repo, "reviewer", "2026-03-09T00:00:00.000Z", {})
    assert "Waiting for your decision (1)" in client.get("/snapshots/").content.decode()


def test_a_decision_on_a_stale_page_is_refused(client, alice, checkout, repo, user_memory):
    client.force_login(alice)
    url = review_url(checkout)
    seen = fingerprint(client, url)
    (repo / ".claude" / "agent-memory-snapshots" / "reviewer" / "flaky.md").write_text("edited")
    before = files_of(user_memory)
    response = decide(client, url, "merge", ["flaky.md"], fp=seen)
    assert "changed since you opened this page" in response.content.decode()
    assert files_of(user_memory) == before
    assert not SnapshotDecision.objects.exists()


def test_a_decision_the_status_does_not_allow_is_refused(client, alice, checkout, user_memory):
    client.force_login(alice)
    url = review_url(checkout)
    response = client.post(url, {"decision": "initialize", "fingerprint": fingerprint(client, url)})
    assert response.status_code == 200
    assert "Select a valid choice." in response.content.decode()
    assert not SnapshotDecision.objects.exists()
    response = client.post(
        url, {"decision": "merge", "fingerprint": fingerprint(client, url), "files": ["../x.md"]}
    )
    assert "Select a valid choice." in response.content.decode()
    snapshot = checkout.repo / ".claude" / "agent-memory-snapshots" / "reviewer"
    assert snapshot_status(snapshot, user_memory).action == "update_available"


# --- access -------------------------------------------------------------------------------------


@pytest.mark.parametrize("username", ["bob", "charlie", "sam"])
def test_nobody_else_sees_or_acts_on_the_update(client, checkout, bob, charlie, sam, username):
    user = {"bob": bob, "charlie": charlie, "sam": sam}[username]
    client.force_login(user)
    url = review_url(checkout)
    assert client.get(url).status_code == 404
    assert client.post(url, {"decision": "keep", "fingerprint": "x"}).status_code == 404
    assert client.post(f"/snapshots/checkouts/{checkout.pk}/rescan/").status_code == 404
    assert client.post(f"/snapshots/checkouts/{checkout.pk}/remove/").status_code == 404
    assert "Nothing to decide." in client.get("/snapshots/").content.decode()
    assert Checkout.objects.exists()


def test_anonymous_visitors_are_sent_to_log_in(client, checkout):
    response = client.get(review_url(checkout))
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_unknown_agents_and_scopes_are_404(client, alice, checkout):
    client.force_login(alice)
    assert client.get(review_url(checkout, agent="nobody")).status_code == 404
    assert client.get(review_url(checkout, scope="project")).status_code == 404  # no such dir
    assert client.get(review_url(checkout, scope="team")).status_code == 404


def test_each_scope_has_its_own_status_and_marker(client, alice, repo, user_memory):
    from snapshots.actions import do_register_checkout

    project = write_files(repo / ".claude" / "agent-memory" / "reviewer", {"p.md": topic("P", "p")})
    mark(project, T2)
    local = write_files(repo / ".claude" / "agent-memory-local" / "reviewer", {"n.txt": "x"})
    mark(user_memory, T2)
    checkout = do_register_checkout(alice, repo)
    statuses = {t.scope: t.status.action for t in targets_for_user(alice)}
    assert statuses == {"user": "none", "project": "none", "local": "initialize"}
    client.force_login(alice)
    decide(client, review_url(checkout, scope="local"), "initialize")
    assert sorted(p.name for p in local.iterdir()) == sorted([MARKER_FILENAME, "n.txt", *SNAPSHOT])
    assert files_of(project)["p.md"] == topic("P", "p")  # other scopes untouched
    assert files_of(user_memory) == {**LOCAL, MARKER_FILENAME: json.dumps({"syncedFrom": T2})}
    store = Store.objects.get(path=str(local))
    assert (store.agent_scope, store.project, store.file_count) == ("local", checkout.project, 3)
