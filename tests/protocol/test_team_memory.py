"""The team memory protocol served at /api/claude_code/team_memory (docs/design.md §10, §15).

alice is the admin (staff), bob a teammate, charlie an outsider, sam staff without projects.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import threading
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memapp.stores.actions import do_forget_memory
from memapp.stores.flags import set_flag
from memapp.stores.models import Project, Store
from teamsync import protocol
from teamsync.models import StoreSyncState, TeamConflict, Tombstone
from teamsync.service import do_resolve_conflict
from tests.api.conftest import api_client

pytestmark = pytest.mark.django_db

SLUG = "acme/widgets"
URL = "/api/claude_code/team_memory?repo=acme%2Fwidgets"
HASHES = URL + "&view=hashes"
CHECKSUM = re.compile(r"sha256:[0-9a-f]{64}")

INDEX = "- [Real DB](feedback_db.md) — no mocks\n"
DB = "---\nname: Real DB\ndescription: Tests hit a real database\ntype: feedback\n---\nCafé.\n"
FREEZE = "---\nname: Freeze\ndescription: Release freeze 2026-03-05\ntype: project\n---\nNo.\n"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def store_checksum(entries: dict[str, str]) -> str:
    """The top-level checksum computed independently: sorted `key NUL sha256:…` lines."""
    lines = "".join(f"{key}\0{sha(entries[key])}\n" for key in sorted(entries))
    return sha(lines)


def put(client, entries: dict[str, str], url: str = URL, **headers):
    return client.put(url, {"entries": entries}, format="json", **headers)


@pytest.fixture
def alice_api(alice):
    return api_client(alice)


@pytest.fixture
def bob_api(bob):
    return api_client(bob)


@pytest.fixture
def charlie_api(charlie):
    return api_client(charlie)


@pytest.fixture
def sam_api(sam):
    return api_client(sam)


@pytest.fixture
def project(alice, bob) -> Project:
    project = Project.objects.create(key=SLUG, repo_slug=SLUG)
    project.members.add(alice, bob)
    return project


@pytest.fixture
def filled(project, alice_api) -> dict[str, str]:
    """The project's team memory holds three entries."""
    entries = {"MEMORY.md": INDEX, "feedback_db.md": DB, "notes/project_freeze.md": FREEZE}
    assert put(alice_api, entries).status_code == 200
    return entries


def team_store() -> Store:
    return Store.objects.get(kind=Store.Kind.TEAM, project__key=SLUG)


def on_disk() -> dict[str, str]:
    root = Path(team_store().path)
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.md"))}


def version() -> int:
    return StoreSyncState.objects.get(store=team_store()).version


def git_log(data_dir: Path, *args: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(data_dir / "team-clone"), "log", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


def git_show(clone: Path, spec: str) -> str:
    """A file of the team clone's history (it has no work tree)."""
    done = subprocess.run(["git", "-C", str(clone), "show", spec], capture_output=True, text=True)
    return done.stdout


def not_found(code: str, message: str) -> dict:
    """A 404 says which case it is, so an agent can tell "nothing yet" from "no such project"."""
    return {"error": {"code": code, "message": message, "details": {"error_code": code}}}


NO_PROJECT = not_found(
    "no_project",
    "memhub has no project acme/widgets that you can reach: if it is there under another "
    "name, staff can give it this repo slug on its project page; if you are not one of its "
    "members, staff can add you.",
)


# --- GET ------------------------------------------------------------------------------------


def test_get_returns_every_entry_with_its_checksum(alice_api, filled):
    response = alice_api.get(URL)

    assert response.status_code == 200
    state = StoreSyncState.objects.get(store=team_store())
    body = response.json()
    assert body == {
        "organizationId": "memhub",
        "repo": SLUG,
        "version": 1,
        "lastModified": state.last_modified.isoformat().replace("+00:00", "Z"),
        "checksum": store_checksum(filled),
        "content": {
            "entries": filled,
            "entryChecksums": {key: sha(text) for key, text in filled.items()},
        },
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", body["lastModified"])
    assert all(CHECKSUM.fullmatch(c) for c in body["content"]["entryChecksums"].values())
    assert CHECKSUM.fullmatch(body["checksum"])
    assert response["ETag"] == f'"{store_checksum(filled)}"'


def test_view_hashes_leaves_out_the_bodies(alice_api, filled):
    response = alice_api.get(HASHES)

    assert response.status_code == 200
    body = response.json()
    assert body["content"] == {"entryChecksums": {key: sha(text) for key, text in filled.items()}}
    assert body["checksum"] == store_checksum(filled)
    assert set(body) == {"organizationId", "repo", "version", "lastModified", "checksum", "content"}


def test_if_none_match_with_the_current_checksum_is_304(alice_api, filled):
    current = store_checksum(filled)

    for header in (f'"{current}"', current, f'W/"{current}"'):
        response = alice_api.get(URL, HTTP_IF_NONE_MATCH=header)
        assert response.status_code == 304
        assert response.content == b""
        assert response["ETag"] == f'"{current}"'
    assert alice_api.get(HASHES, HTTP_IF_NONE_MATCH=f'"{current}"').status_code == 304
    assert alice_api.get(URL, HTTP_IF_NONE_MATCH='"sha256:0"').status_code == 200


def test_a_repo_slug_in_another_case_is_the_same_project(sam, sam_api, alice_api, filled):
    """GitHub's slugs name a repository in any case: a client that spells it `ACME/Widgets`
    (staff, who may create projects) reaches acme/widgets, and makes no second project (nor a
    second folder in the shared repository, which macOS and Windows would see as one)."""
    Project.objects.get(key=SLUG).members.add(sam)
    other = URL.replace("acme%2Fwidgets", "ACME%2FWidgets")
    assert (
        put(sam_api, {"feedback_ci.md": FREEZE.replace("Freeze", "CI")}, url=other).status_code
        == 200
    )
    assert Project.objects.count() == 1
    assert set(on_disk()) == {*filled, "feedback_ci.md"}
    assert "feedback_ci.md" in alice_api.get(URL).json()["content"]["entries"]


def test_a_repo_without_team_memory_is_404(alice_api, project):
    assert alice_api.get(URL).status_code == 404
    assert alice_api.get(URL).json() == not_found("empty", "acme/widgets has no team memory yet.")
    unknown = alice_api.get("/api/claude_code/team_memory?repo=acme%2Fnothing")
    assert unknown.status_code == 404  # staff: her first push creates it
    assert unknown.json() == not_found("empty", "memhub has no team memory for acme/nothing yet.")
    assert not Project.objects.filter(key="acme/nothing").exists()


def test_an_unknown_repo_is_no_project_for_who_may_not_create_one(bob_api, project):
    response = bob_api.get("/api/claude_code/team_memory?repo=acme%2Fwidgetz")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_project"
    assert (
        put(
            bob_api, {"a.md": "x"}, url="/api/claude_code/team_memory?repo=acme%2Fwidgetz"
        ).status_code
        == 404
    )
    assert not Project.objects.filter(key="acme/widgetz").exists()


def test_an_emptied_team_store_is_404_again(alice, alice_api, filled):
    store = team_store()
    for key in ("feedback_db.md", "notes/project_freeze.md"):
        do_forget_memory(store, alice, key)
    Path(store.path, "MEMORY.md").unlink()

    assert alice_api.get(URL).status_code == 404


def test_a_non_member_gets_the_same_404_as_for_an_unknown_repo(charlie_api, sam_api, filled):
    for client in (charlie_api, sam_api):  # staff status grants no access either
        response = client.get(URL)
        assert response.status_code == 404 and response.json() == NO_PROJECT
        assert client.get(HASHES).status_code == 404
        response = put(client, {"feedback_db.md": "overwritten"})
        assert response.status_code == 404 and response.json() == NO_PROJECT
    assert on_disk() == filled


def test_a_missing_or_bad_token_is_401(filled):
    anonymous = APIClient()
    response = anonymous.get(URL)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert response["WWW-Authenticate"] == 'Bearer realm="memhub"'
    for token in ("mh_not-a-real-token", "nonsense", ""):
        bad = APIClient()
        bad.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        assert bad.get(URL).status_code == 401
        assert put(bad, {"x.md": "x"}).status_code == 401
    assert put(anonymous, {"x.md": "x"}).status_code == 401
    assert "x.md" not in on_disk()


# --- PUT ------------------------------------------------------------------------------------


def test_put_upserts_and_keeps_the_keys_it_was_not_sent(alice_api, filled):
    changed = FREEZE.replace("No.", "Nothing ships.")

    response = put(alice_api, {"notes/project_freeze.md": changed, "reference_ci.md": "CI.\n"})

    assert response.status_code == 200
    expected = {**filled, "notes/project_freeze.md": changed, "reference_ci.md": "CI.\n"}
    assert on_disk() == expected
    body = response.json()
    assert body["checksum"] == store_checksum(expected)
    assert body["version"] == 2
    assert body["lastModified"].endswith("Z")
    assert alice_api.get(URL).json()["content"]["entries"] == expected


def test_if_match_must_name_the_current_checksum(alice_api, filled):
    current = store_checksum(filled)

    stale = put(alice_api, {"feedback_db.md": "stale\n"}, HTTP_IF_MATCH='"sha256:1234"')

    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "precondition_failed"
    assert stale.json()["error"]["details"]["checksum"] == current
    assert on_disk() == filled and version() == 1

    fresh = put(alice_api, {"feedback_db.md": "fresh\n"}, HTTP_IF_MATCH=f'"{current}"')
    assert fresh.status_code == 200
    assert on_disk()["feedback_db.md"] == "fresh\n"

    # The client omits If-Match before its first pull: unconditional.
    blind = put(alice_api, {"feedback_db.md": "blind\n"})
    assert blind.status_code == 200
    assert on_disk()["feedback_db.md"] == "blind\n"


def test_the_version_grows_with_every_change_and_only_then(alice_api, filled):
    versions = [version()]
    for text in ("one\n", "two\n", "two\n", "three\n"):
        response = put(alice_api, {"feedback_db.md": text})
        assert response.status_code == 200
        versions.append(response.json()["version"])

    assert versions == [1, 2, 3, 3, 4]
    assert alice_api.get(URL).json()["version"] == 4


def test_a_rename_changes_the_top_level_checksum(alice, alice_api, project):
    other = Project.objects.create(key="acme/gadgets", repo_slug="acme/gadgets")
    other.members.add(alice)
    put(alice_api, {"a.md": DB})
    put(alice_api, {"b.md": DB}, url="/api/claude_code/team_memory?repo=acme%2Fgadgets")

    first = alice_api.get(HASHES).json()
    second = alice_api.get("/api/claude_code/team_memory?repo=acme%2Fgadgets&view=hashes").json()

    assert first["content"]["entryChecksums"]["a.md"] == sha(DB)
    assert second["content"]["entryChecksums"]["b.md"] == sha(DB)
    assert first["checksum"] != second["checksum"]
    assert first["checksum"] == store_checksum({"a.md": DB})
    assert second["checksum"] == store_checksum({"b.md": DB})


def test_too_many_entries_is_413_after_the_merge_and_writes_nothing(alice_api, filled):
    set_flag("team_max_entries", 3)

    response = put(alice_api, {"one.md": "1\n", "two.md": "2\n", "feedback_db.md": "changed\n"})

    assert response.status_code == 413
    details = response.json()["error"]["details"]
    assert details == {
        "error_code": "team_memory_too_many_entries",
        "max_entries": 3,
        "received_entries": 4,  # 2 kept + 2 new topics; MEMORY.md is not an entry
    }
    assert response.json()["error"]["code"] == "team_memory_too_many_entries"
    assert on_disk() == filled and version() == 1
    # Up to the cap is fine, and updates of existing keys never count twice.
    assert put(alice_api, {"one.md": "1\n", "feedback_db.md": "changed\n"}).status_code == 200
    assert put(alice_api, {"one.md": "1 again\n", "MEMORY.md": INDEX + "x\n"}).status_code == 200


def test_an_entry_over_250000_bytes_is_413(alice_api, filled):
    at_limit = "é" * 125_000  # 250,000 bytes of UTF-8 in 125,000 characters

    assert put(alice_api, {"big.md": at_limit}).status_code == 200

    response = put(alice_api, {"small.md": "fine\n", "bigger.md": at_limit + "x"})
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "entry_too_large"
    assert error["details"]["error_code"] == "entry_too_large"
    assert error["details"]["key"] == "bigger.md"
    assert "small.md" not in on_disk() and "bigger.md" not in on_disk()


def test_a_secret_refuses_the_whole_put_naming_keys_rules_and_lines(alice_api, filled):
    leak = f"---\nname: CI\ndescription: CI access\ntype: reference\n---\nToken: {GITHUB_TOKEN}\n"
    keyword = 'Deploy notes\npassword = "hunterfoo-but-longer"\n'  # only detect-secrets knows it

    response = put(alice_api, {"clean.md": "Clean.\n", "ci.md": leak, "deploy.md": keyword})

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "team_memory_secret_detected"
    details = response.json()["error"]["details"]
    assert details["error_code"] == "team_memory_secret_detected"
    assert details["entries"] == [
        {
            "key": "ci.md",
            "rule_id": "github-pat",
            "label": "GitHub personal access token",
            "line": 6,
        },
        {
            "key": "deploy.md",
            "rule_id": "detect-secrets:Secret Keyword",
            "label": "Secret Keyword",
            "line": 2,
        },
    ]
    assert GITHUB_TOKEN not in response.content.decode()
    assert "hunterfoo-but" not in response.content.decode()
    assert on_disk() == filled and version() == 1


def test_a_token_in_a_key_refuses_the_put_like_one_in_the_text(alice_api, filled):
    """The key is shared as surely as the text: in every member's checkout, in git."""
    key = f"reference_{GITHUB_TOKEN}.md"

    response = put(alice_api, {key: "---\nname: CI\ndescription: CI\ntype: reference\n---\nOk.\n"})

    assert response.status_code == 422
    details = response.json()["error"]["details"]
    assert details["entries"] == [
        {"key": key, "rule_id": "github-pat", "label": "GitHub personal access token", "line": 0}
    ]
    assert on_disk() == filled and version() == 1


def test_a_file_team_sync_keeps_back_is_not_served_nor_its_index_line(alice_api, bob_api, filled):
    """A file in the team store that team sync keeps out of the shared repository (here a
    secret its owner's agent wrote straight to disk) does not reach teammates through the
    protocol either, nor does its MEMORY.md line; the owner's store keeps both, and a PUT
    of the index the teammate got leaves the owner's line where it was."""
    from teamsync.models import BlockedFile
    from teamsync.service import do_commit_team_change

    root = Path(team_store().path)
    leak = f"---\nname: CI\ndescription: CI access\ntype: reference\n---\nToken: {GITHUB_TOKEN}\n"
    (root / "reference_ci.md").write_text(leak)
    owners_index = INDEX + "- [CI](reference_ci.md) — the runner's token\n"
    (root / "MEMORY.md").write_text(owners_index)
    do_commit_team_change(team_store(), None)
    assert BlockedFile.objects.filter(key="reference_ci.md").exists()

    got = bob_api.get(URL).json()
    entries = got["content"]["entries"]
    assert set(entries) == {"MEMORY.md", "feedback_db.md", "notes/project_freeze.md"}
    assert entries["MEMORY.md"] == INDEX
    assert GITHUB_TOKEN not in bob_api.get(URL).content.decode()
    hashes = bob_api.get(HASHES).json()
    assert hashes["content"]["entryChecksums"] == {k: sha(v) for k, v in entries.items()}
    assert got["checksum"] == hashes["checksum"] == store_checksum(entries)

    edited = INDEX + "- [Freeze](notes/project_freeze.md) — release freeze\n"
    answer = put(bob_api, {"MEMORY.md": edited}, HTTP_IF_MATCH=f'"{got["checksum"]}"')
    assert answer.status_code == 200, answer.json()
    freeze = "- [Freeze](notes/project_freeze.md) — release freeze\n"
    assert (root / "MEMORY.md").read_text() == owners_index + freeze  # after the line it follows
    assert bob_api.get(URL).json()["content"]["entries"]["MEMORY.md"] == edited
    assert (root / "reference_ci.md").read_text() == leak
    # A client that got the file before it was kept back sends its copy at every push: that
    # copy is passed over, and the rest of the push goes in.
    resent = {"reference_ci.md": leak, "feedback_new.md": "New.\n"}
    current = bob_api.get(HASHES).json()["checksum"]
    answer = put(bob_api, resent, HTTP_IF_MATCH=f'"{current}"')
    assert answer.status_code == 200, answer.json()
    assert (root / "feedback_new.md").read_text() == "New.\n"
    changed = {"reference_ci.md": leak.replace("Token", "The token")}
    assert put(bob_api, changed).status_code == 422  # a changed copy is judged as ever


def test_what_team_sync_has_not_judged_yet_is_not_served_if_the_gate_flags_it(bob_api, filled):
    """Team sync judges a file when it commits it: one an agent wrote straight to disk since
    (here before any sync), and an index line of a file not in the shared repository (whose
    shared form leaves it out, so it is never kept back) must not reach teammates meanwhile."""
    root = Path(team_store().path)
    leak = f"---\nname: CI\ndescription: CI access\ntype: reference\n---\nToken: {GITHUB_TOKEN}\n"
    (root / "reference_ci.md").write_text(leak)

    got = bob_api.get(URL).json()
    assert GITHUB_TOKEN not in json.dumps(got)
    assert set(got["content"]["entries"]) == set(filled)
    hashes = bob_api.get(HASHES).json()
    assert got["checksum"] == hashes["checksum"] == store_checksum(filled)

    (root / "reference_ci.md").unlink()
    dangling = f"- [CI](reference_ci.md) — the runner's token is {GITHUB_TOKEN}\n"
    (root / "MEMORY.md").write_text(INDEX + dangling)
    got = bob_api.get(URL).json()
    assert GITHUB_TOKEN not in json.dumps(got)
    assert set(got["content"]["entries"]) == {"feedback_db.md", "notes/project_freeze.md"}
    assert got["checksum"] == bob_api.get(HASHES).json()["checksum"]
    (root / "MEMORY.md").write_text(INDEX)  # fixed: served again
    assert bob_api.get(URL).json()["content"]["entries"]["MEMORY.md"] == INDEX


def test_a_kept_back_files_line_is_left_out_whatever_characters_come_before_it(bob_api, filled):
    """Only `\\n` ends an index line: a description holding U+2028 (a line break to Python's
    `splitlines`) must not shift which line is left out."""
    from teamsync.models import BlockedFile

    root = Path(team_store().path)
    odd = "- [Real DB](feedback_db.md) — no mocks\u2028ever\n"
    (root / "MEMORY.md").write_text(odd + "- [Freeze](notes/project_freeze.md) — release freeze\n")
    store, key = team_store(), "notes/project_freeze.md"
    BlockedFile.objects.create(store=store, key=key, reason=BlockedFile.Reason.CAPPED, hits=[])

    served = bob_api.get(URL).json()["content"]["entries"]
    assert served["MEMORY.md"] == odd
    assert key not in served


def test_turning_the_entropy_plugins_on_judges_unsynced_files_again(bob_api, filled):
    """A judgment of a file not yet synced holds only under the gate's settings it was made
    with: once an admin turns the entropy plugins on, a random hex value is withheld."""
    value = 'checksum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"'
    (Path(team_store().path) / "reference_build.md").write_text(f"Build {value}\n")
    assert "reference_build.md" in bob_api.get(URL).json()["content"]["entries"]

    set_flag("secrets_entropy_plugins", True)
    try:
        got = bob_api.get(URL).json()
    finally:
        set_flag("secrets_entropy_plugins", False)
    assert "reference_build.md" not in got["content"]["entries"]
    assert set(got["content"]["entries"]) == set(filled)


def test_a_put_is_a_git_commit_authored_by_the_tokens_user(bob, bob_api, filled, data_dir):
    response = put(bob_api, {"feedback_db.md": "Bob's edit.\n"})

    assert response.status_code == 200
    assert git_log(data_dir, "-1", "--format=%an") == ["bob"]
    assert git_log(data_dir, "--format=%an")[1] == "alice"
    clone = data_dir / "team-clone"
    assert git_show(clone, f"HEAD:{SLUG}/feedback_db.md") == "Bob's edit.\n"
    assert git_show(clone, f"HEAD:{SLUG}/notes/project_freeze.md") == FREEZE


# --- deletions are not undone by stale clients -----------------------------------------------


def test_a_key_deleted_in_memhub_is_not_resurrected_by_a_stale_client(alice, bob_api, filled):
    stale = store_checksum(filled)
    do_forget_memory(team_store(), alice, "feedback_db.md")
    assert Tombstone.objects.filter(store=team_store(), key="feedback_db.md").exists()
    after_delete = version()

    blind = put(bob_api, {"feedback_db.md": DB, "reference_new.md": "New.\n"})

    assert blind.status_code == 200
    assert blind.json()["held"] == ["feedback_db.md"]
    assert "feedback_db.md" not in on_disk()
    assert on_disk()["reference_new.md"] == "New.\n"
    conflict = TeamConflict.objects.get(store=team_store(), key="feedback_db.md")
    assert conflict.kind == TeamConflict.Kind.RESURRECT
    assert (conflict.ours, conflict.theirs, conflict.resolved_at) == (None, DB, None)
    assert version() == after_delete + 1  # only reference_new.md

    # A client with an old checksum is told to refetch; the retry with the fresh checksum
    # (what Claude Code's client does after a 412) is held just the same.
    assert put(bob_api, {"feedback_db.md": DB}, HTTP_IF_MATCH=f'"{stale}"').status_code == 412
    current = bob_api.get(HASHES).json()["checksum"]
    retry = put(bob_api, {"feedback_db.md": DB}, HTTP_IF_MATCH=f'"{current}"')
    assert retry.status_code == 200 and retry.json()["held"] == ["feedback_db.md"]
    assert retry.json()["checksum"] == current
    assert "feedback_db.md" not in on_disk()
    assert TeamConflict.objects.filter(key="feedback_db.md").count() == 1


def test_a_key_deleted_through_the_files_api_is_held_too(alice_api, bob_api, filled):
    store = team_store()
    deleted = alice_api.delete(f"/api/v1/stores/{store.pk}/files/notes/project_freeze.md")
    assert deleted.status_code == 204

    response = put(bob_api, {"notes/project_freeze.md": FREEZE + "edited\n"})

    assert response.json()["held"] == ["notes/project_freeze.md"]
    assert "notes/project_freeze.md" not in on_disk()
    conflict = TeamConflict.objects.get(key="notes/project_freeze.md")
    assert conflict.kind == "resurrect" and conflict.theirs == FREEZE + "edited\n"


def test_a_person_can_bring_a_held_key_back(alice, bob_api, filled):
    do_forget_memory(team_store(), alice, "feedback_db.md")
    put(bob_api, {"feedback_db.md": DB})

    do_resolve_conflict(TeamConflict.objects.get(key="feedback_db.md"), alice, "theirs")

    assert on_disk()["feedback_db.md"] == DB
    assert not Tombstone.objects.filter(key="feedback_db.md").exists()


def test_a_re_upload_the_person_already_refused_raises_no_new_conflict(alice, bob_api, filled):
    do_forget_memory(team_store(), alice, "feedback_db.md")
    put(bob_api, {"feedback_db.md": DB})
    do_resolve_conflict(TeamConflict.objects.get(key="feedback_db.md"), alice, "delete")

    again = put(bob_api, {"feedback_db.md": DB})
    assert again.json()["held"] == ["feedback_db.md"]
    assert TeamConflict.objects.filter(key="feedback_db.md", resolved_at=None).count() == 0

    edited = put(bob_api, {"feedback_db.md": DB + "more\n"})
    assert edited.json()["held"] == ["feedback_db.md"]
    assert TeamConflict.objects.get(key="feedback_db.md", resolved_at=None).theirs == DB + "more\n"
    assert "feedback_db.md" not in on_disk()


# --- creating projects ------------------------------------------------------------------------


def test_staff_create_an_unknown_repo_with_a_put(sam, sam_api):
    response = put(sam_api, {"MEMORY.md": INDEX, "feedback_db.md": DB})

    assert response.status_code == 200
    project = Project.objects.get(key=SLUG)
    assert project.repo_slug == SLUG
    assert list(project.members.all()) == [sam]
    store = team_store()
    assert (store.origin, store.mount) == (Store.Origin.MANAGED, "")
    assert on_disk() == {"MEMORY.md": INDEX, "feedback_db.md": DB}
    assert sam_api.get(URL).json()["content"]["entries"] == on_disk()


def test_others_need_the_flag_to_create_a_repo(bob, bob_api, alice):
    assert put(bob_api, {"feedback_db.md": DB}).status_code == 404
    assert not Project.objects.exists()

    set_flag("protocol_project_creation", "everyone", user=alice)

    assert put(bob_api, {"feedback_db.md": DB}).status_code == 200
    assert list(Project.objects.get(key=SLUG).members.all()) == [bob]


def test_a_get_never_creates_a_repo(sam_api):
    assert sam_api.get(URL).status_code == 404
    assert not Project.objects.exists()


# --- bad requests -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "../evil.md",
        "notes/../../evil.md",
        "%2e%2e%2fevil.md",
        "\uff0e\uff0e\uff0fevil.md",
        "/etc/evil.md",
        "notes\\evil.md",
        "C:evil.md",
        "nul\0.md",
        "",
        "notes.txt",
    ],
)
def test_an_unsafe_key_is_400_and_nothing_is_written(alice_api, filled, data_dir, key):
    before = git_log(data_dir, "--format=%H")

    response = put(alice_api, {"fine.md": "Fine.\n", key: "Evil.\n"})

    assert response.status_code == 400
    assert on_disk() == filled and version() == 1
    assert git_log(data_dir, "--format=%H") == before
    assert not list(data_dir.rglob("evil.md"))


def test_an_unsafe_key_for_a_new_repo_creates_nothing(sam_api):
    response = put(sam_api, {"../evil.md": "Evil.\n"})

    assert response.status_code == 400
    assert not Project.objects.exists() and not Store.objects.exists()


@pytest.mark.parametrize(
    "repo", ["", "widgets", "..%2F..%2Fetc", ".git%2Fhooks", "acme%2F..", "a%2Fb%2Fc", "a%2F"]
)
def test_a_malformed_repo_slug_is_refused_and_creates_nothing(sam_api, repo):
    response = put(sam_api, {"fine.md": "Fine.\n"}, url=f"/api/claude_code/team_memory?repo={repo}")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_repo"
    assert not Project.objects.exists()
    assert sam_api.get(f"/api/claude_code/team_memory?repo={repo}").status_code == 400


@pytest.mark.parametrize(
    "body",
    [[], {"entries": []}, {"entries": {"a.md": 1}}, {"entries": {"a.md": None}}, {"other": {}}],
)
def test_a_malformed_body_is_400(alice_api, filled, body):
    response = alice_api.put(URL, body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
    assert on_disk() == filled


def test_a_github_style_dot_repo_is_a_valid_slug(sam_api):
    url = "/api/claude_code/team_memory?repo=acme%2F.github"

    assert put(sam_api, {"feedback_db.md": DB}, url=url).status_code == 200
    assert Project.objects.get().repo_slug == "acme/.github"


@pytest.mark.django_db(transaction=True)
def test_a_put_racing_another_waits_for_it_and_then_gets_412(alice, bob, project, monkeypatch):
    first, second = api_client(alice), api_client(bob)
    assert put(first, {"feedback_db.md": DB}).status_code == 200
    current = second.get(HASHES).json()["checksum"]  # both have now fetched the same checksum
    inside, release = threading.Event(), threading.Event()
    scan = protocol.scan_for_push

    def slow_scan(entries):
        if "first.md" in entries:  # the first PUT has passed If-Match and is about to write
            inside.set()
            release.wait(10)
        return scan(entries)

    monkeypatch.setattr(protocol, "scan_for_push", slow_scan)
    results: dict[str, int] = {}

    def send(name: str, client) -> None:
        try:
            response = put(client, {f"{name}.md": "text\n"}, HTTP_IF_MATCH=f'"{current}"')
            results[name] = response.status_code
        finally:
            connection.close()  # the thread's own: left open, PostgreSQL could not drop the test db

    one = threading.Thread(target=send, args=("first", first))
    one.start()
    assert inside.wait(10)
    two = threading.Thread(target=send, args=("second", second))
    two.start()
    two.join(1.0)
    assert two.is_alive()  # held at the lock while the first PUT is between check and write
    release.set()
    one.join(10)
    two.join(10)

    assert results == {"first": 200, "second": 412}
    assert "first.md" in on_disk() and "second.md" not in on_disk()


# --- MEMORY.md ------------------------------------------------------------------------------

TEAM_INDEX = (
    "- [Real DB](feedback_db.md) — no mocks\n"
    "- [Freeze](notes/project_freeze.md) — release freeze\n"
    "- [CI](reference_ci.md) — where CI runs\n"
)


def test_an_index_sent_without_if_match_is_merged_line_by_line_into_the_team_s(
    alice_api, bob_api, filled
):
    put(alice_api, {"MEMORY.md": TEAM_INDEX, "reference_ci.md": "CI.\n"})
    # bob's client has never pulled: his one-line index is all he knows.
    response = put(
        bob_api, {"MEMORY.md": "- [Mine](project_mine.md) — hers\n", "project_mine.md": "M.\n"}
    )
    assert response.status_code == 200
    merged = "- [Mine](project_mine.md) — hers\n" + TEAM_INDEX
    assert on_disk()["MEMORY.md"] == merged
    assert response.json()["checksum"] == store_checksum({**on_disk()})
    # The index's history says who changed it and how; the team's version is one step back.
    latest, previous = team_store().versions.filter(path="MEMORY.md")[:2]
    assert (latest.user.username, latest.via) == ("bob", "protocol")
    assert (previous.user.username, previous.via) == ("alice", "protocol")


def test_an_index_sent_with_the_current_if_match_is_taken_as_it_is(alice_api, filled):
    put(alice_api, {"MEMORY.md": TEAM_INDEX, "reference_ci.md": "CI.\n"})
    current = store_checksum(on_disk())
    curated = "- [Real DB](feedback_db.md) — curated\n"  # the client saw all three lines
    response = put(alice_api, {"MEMORY.md": curated}, HTTP_IF_MATCH=f'"{current}"')
    assert response.status_code == 200
    assert on_disk()["MEMORY.md"] == curated


def test_a_crlf_team_index_without_a_final_newline_keeps_its_form_when_merged(
    alice_api, bob_api, filled
):
    crlf = TEAM_INDEX.replace("\n", "\r\n").removesuffix("\r\n")
    current = f'"{store_checksum(filled)}"'
    put(alice_api, {"MEMORY.md": crlf, "reference_ci.md": "CI.\n"}, HTTP_IF_MATCH=current)
    put(bob_api, {"MEMORY.md": "- [Mine](project_mine.md) — hers\n", "project_mine.md": "M.\n"})
    data = (Path(team_store().path) / "MEMORY.md").read_bytes()
    assert data == ("- [Mine](project_mine.md) — hers\r\n" + crlf).encode()
