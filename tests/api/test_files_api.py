import hashlib
from pathlib import Path

import pytest

from memapp.stores.models import Event, Project, Store
from memapp.stores.projects import resolve_store

pytestmark = pytest.mark.django_db

MEMORY = "---\nname: Real DB\ndescription: Tests hit a real database\ntype: feedback\n---\nBody.\n"


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def store(alice):
    return resolve_store(alice, "acme/app", "private")


def test_resolve_creates_the_callers_private_store_once(alice_api, alice, settings):
    first = alice_api.post(
        "/api/v1/stores/resolve", {"project": "acme/app", "scope": "private"}, format="json"
    )
    assert first.status_code == 200
    again = alice_api.post(
        "/api/v1/stores/resolve", {"project": "acme/app", "scope": "private"}, format="json"
    )
    assert first.json()["id"] == again.json()["id"]
    store = Store.objects.get(pk=first.json()["id"])
    assert store.owner == alice and store.kind == "private"
    assert Path(store.path).is_relative_to(settings.MEMHUB_DATA_DIR)
    assert list(Project.objects.get(key="acme/app").members.all()) == [alice]


def test_a_discovered_project_takes_its_slug_keeping_the_directory_name_as_alias(alice_api, alice):
    project = Project.objects.create(key="-home-alice-app")
    project.members.add(alice)
    response = alice_api.post(
        "/api/v1/stores/resolve",
        {"project": "acme/app", "project_dirname": "-home-alice-app", "scope": "private"},
        format="json",
    )
    assert response.json()["project"] == "acme/app"
    project.refresh_from_db()
    assert (project.key, project.repo_slug) == ("acme/app", "acme/app")
    assert list(project.aliases.values_list("name", flat=True)) == ["-home-alice-app"]
    by_alias = alice_api.post(
        "/api/v1/stores/resolve", {"project": "-home-alice-app", "scope": "private"}, format="json"
    )
    assert by_alias.json()["id"] == response.json()["id"]
    assert Project.objects.count() == 1


def test_a_member_who_may_not_create_projects_cannot_aim_one_at_another_slug(bob_api, bob):
    """`project_dirname` links a project to a slug only for whoever may create that project
    (`protocol_project_creation`, staff by default): else any member could point the
    project's team memory at whatever the shared repository holds under any slug."""
    project = Project.objects.create(key="-home-bob-app")
    project.members.add(bob)
    ask = {"project": "acme/secret", "project_dirname": "-home-bob-app", "scope": "private"}
    response = bob_api.post("/api/v1/stores/resolve", ask, format="json")
    assert response.status_code == 200  # bob's store, in the project he knows
    project.refresh_from_db()
    assert (project.key, project.repo_slug) == ("-home-bob-app", "")
    assert response.json()["project"] == "-home-bob-app"


def test_resolve_creates_a_project_only_for_who_may_create_one(bob_api, bob, alice):
    from memapp.stores.flags import set_flag

    ask = {"project": "acme/new", "scope": "private"}
    refused = bob_api.post("/api/v1/stores/resolve", ask, format="json")
    assert refused.status_code == 404
    assert not Project.objects.exists() and not Store.objects.exists()
    set_flag("protocol_project_creation", "everyone", user=alice)
    assert bob_api.post("/api/v1/stores/resolve", ask, format="json").status_code == 200
    assert Project.objects.get().key == "acme/new"


def test_resolve_refuses_a_project_key_that_is_neither_slug_nor_directory_name(alice_api):
    ask = {"project": "acme/app/extra", "scope": "private"}
    response = alice_api.post("/api/v1/stores/resolve", ask, format="json")
    assert response.status_code == 400
    assert not Project.objects.exists()


def test_resolve_without_create_finds_a_store_but_never_makes_one(alice_api, alice, settings):
    ask = {"project": "acme/app", "scope": "private", "create": False}

    missing = alice_api.post("/api/v1/stores/resolve", ask, format="json")

    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "no_store"
    assert not Project.objects.exists() and not Store.objects.exists()
    assert not (settings.MEMHUB_DATA_DIR / "stores").exists()
    store = resolve_store(alice, "acme/app", "private")
    found = alice_api.post("/api/v1/stores/resolve", ask, format="json")
    assert found.status_code == 200 and found.json()["id"] == store.pk
    team = alice_api.post("/api/v1/stores/resolve", {**ask, "scope": "team"}, format="json")
    assert team.json()["error"]["code"] == "no_store"
    assert Store.objects.count() == 1


def test_resolve_without_create_leaves_a_discovered_project_unlinked(alice_api, alice):
    project = Project.objects.create(key="-home-alice-app")
    project.members.add(alice)
    resolve_store(alice, "-home-alice-app", "private")
    ask = {"project": "acme/app", "project_dirname": "-home-alice-app", "scope": "private"}

    response = alice_api.post("/api/v1/stores/resolve", {**ask, "create": False}, format="json")

    assert response.json()["project"] == "-home-alice-app"
    project.refresh_from_db()
    assert project.repo_slug == ""


def test_team_stores_need_membership(alice_api, bob_api, alice, bob):
    resolve_store(alice, "acme/app", "private")
    team = {"project": "acme/app", "scope": "team"}
    assert alice_api.post("/api/v1/stores/resolve", team, format="json").status_code == 200
    response = bob_api.post("/api/v1/stores/resolve", team, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_project"  # as for a project that is not there


def test_put_get_list_and_delete_a_file(alice_api, store):
    url = f"/api/v1/stores/{store.pk}/files/feedback_db.md"
    put = alice_api.put(url, {"content": MEMORY}, format="json")
    assert put.status_code == 201 and put.json()["checksum"] == sha(MEMORY)
    assert Path(store.path, "feedback_db.md").read_text() == MEMORY
    got = alice_api.get(url)
    assert got.json()["content"] == MEMORY and got["ETag"] == f'"{sha(MEMORY)}"'
    assert alice_api.get(url, HTTP_IF_NONE_MATCH=f'"{sha(MEMORY)}"').status_code == 304
    listing = alice_api.get(f"/api/v1/stores/{store.pk}/files/").json()["files"]
    assert [(f["key"], f["name"], f["type"]) for f in listing] == [
        ("feedback_db.md", "Real DB", "feedback")
    ]
    hashes = alice_api.get(f"/api/v1/stores/{store.pk}/files/?view=hashes").json()
    assert hashes == {"checksums": {"feedback_db.md": sha(MEMORY)}}
    assert alice_api.delete(url).status_code == 204
    assert not Path(store.path, "feedback_db.md").exists()
    assert alice_api.get(url).status_code == 404
    assert [e.kind for e in Event.objects.order_by("pk")] == ["memory_written", "memory_forgotten"]


def test_a_stale_if_match_gets_412_and_writes_nothing(alice_api, store):
    url = f"/api/v1/stores/{store.pk}/files/a.md"
    alice_api.put(url, {"content": "v1"}, format="json")
    response = alice_api.put(url, {"content": "v2"}, format="json", HTTP_IF_MATCH=f'"{sha("v0")}"')
    assert response.status_code == 412
    assert response.json()["error"]["code"] == "precondition_failed"
    assert Path(store.path, "a.md").read_text() == "v1"
    ok = alice_api.put(url, {"content": "v2"}, format="json", HTTP_IF_MATCH=f'"{sha("v1")}"')
    assert ok.status_code == 201
    assert alice_api.delete(url, HTTP_IF_MATCH=sha("v1")).status_code == 412


@pytest.mark.parametrize("key", ["a.md", "new.md"])
def test_an_empty_if_match_tag_matches_nothing_and_writes_nothing(alice_api, store, key):
    alice_api.put(f"/api/v1/stores/{store.pk}/files/a.md", {"content": "v1"}, format="json")
    url = f"/api/v1/stores/{store.pk}/files/{key}"
    response = alice_api.put(url, {"content": "v2"}, format="json", HTTP_IF_MATCH='""')
    assert response.status_code == 412
    assert response.json()["error"]["code"] == "precondition_failed"
    assert Path(store.path, "a.md").read_text() == "v1"
    assert not Path(store.path, "new.md").exists()
    assert alice_api.delete(url, HTTP_IF_MATCH='""').status_code == (412 if key == "a.md" else 404)
    assert Path(store.path, "a.md").read_text() == "v1"


def test_if_match_star_and_lists_are_read_as_http_reads_them(alice_api, store):
    """`*` matches any existing file, a list matches when any of its tags does."""
    url = f"/api/v1/stores/{store.pk}/files/a.md"
    star = alice_api.put(url, {"content": "v1"}, format="json", HTTP_IF_MATCH="*")
    assert star.status_code == 412
    assert star.json()["error"]["message"] == "'a.md' does not exist (If-Match: *)"
    assert not Path(store.path, "a.md").exists()
    alice_api.put(url, {"content": "v1"}, format="json")
    assert (
        alice_api.put(url, {"content": "v2"}, format="json", HTTP_IF_MATCH="*").status_code == 201
    )
    listed = f'"{sha("v0")}", W/"{sha("v2")}"'
    ok = alice_api.put(url, {"content": "v3"}, format="json", HTTP_IF_MATCH=listed)
    assert ok.status_code == 201
    stale = alice_api.put(url, {"content": "v4"}, format="json", HTTP_IF_MATCH=listed)
    assert stale.status_code == 412 and Path(store.path, "a.md").read_text() == "v3"


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("../escape.md", "dotdot"),
        ("%2e%2e%2fescape.md", "encoded-traversal"),
        ("team/x.md", None),
        ("notes.txt", None),
        ("a\\b.md", "backslash"),
    ],
)
def test_bad_keys_get_400_naming_the_rule(alice_api, store, key, rule):
    response = alice_api.post(
        f"/api/v1/stores/{store.pk}/batch", {"files": {key: "x"}}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_key"
    if rule:
        assert error["details"]["rule"] == rule
    assert list(Path(store.path).iterdir()) == []


def test_oversized_entries_get_413_and_big_bodies_too(alice_api, store):
    response = alice_api.put(
        f"/api/v1/stores/{store.pk}/files/big.md", {"content": "x" * 250_001}, format="json"
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "entry_too_large"
    huge = alice_api.put(
        f"/api/v1/stores/{store.pk}/files/big.md",
        {"content": "x" * (5 * 1024 * 1024 + 10)},
        format="json",
    )
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "too_large"
    assert not Path(store.path, "big.md").exists()


def test_secrets_are_refused_with_rule_and_line_never_the_value(alice_api, store):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    body = {"files": {"ok.md": "fine\n", "leak.md": f"line one\ntoken: {token}\n"}}
    response = alice_api.post(f"/api/v1/stores/{store.pk}/batch", body, format="json")
    assert response.status_code == 422
    assert token not in response.content.decode()
    entries = response.json()["error"]["details"]["entries"]
    assert entries == [
        {"key": "leak.md", "rule_id": "github-pat", "label": entries[0]["label"], "line": 2}
    ]
    assert list(Path(store.path).iterdir()) == []  # all or nothing


def test_a_token_in_a_files_name_is_refused_like_one_in_its_text(alice_api, store):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    response = alice_api.put(
        f"/api/v1/stores/{store.pk}/files/notes_{token}.md", {"content": "fine\n"}, format="json"
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["details"]["entries"] == [
        {
            "key": f"notes_{token}.md",
            "rule_id": "github-pat",
            "label": error["details"]["entries"][0]["label"],
            "line": 0,
        }
    ]
    assert "(GitHub personal access token, in its name)" in error["message"]
    assert list(Path(store.path).iterdir()) == []


def test_a_batch_that_uploads_and_deletes_one_key_is_refused_whole(alice_api, store):
    url = f"/api/v1/stores/{store.pk}/batch"
    assert alice_api.post(url, {"files": {"a.md": "A"}}, format="json").status_code == 200
    body = {"files": {"a.md": "A, new", "b.md": "B"}, "delete": ["a.md"]}
    refused = alice_api.post(url, body, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["details"] == {
        "delete": {"a.md": ["Both uploaded and deleted in this batch: send one or the other."]}
    }
    assert Path(store.path, "a.md").read_text() == "A"
    assert not Path(store.path, "b.md").exists()


def test_a_batch_keeps_each_files_mtime_but_none_in_the_future(alice_api, store):
    import time

    url = f"/api/v1/stores/{store.pk}/batch"
    old_ms, future_ms = int((time.time() - 86400 * 30) * 1000), int((time.time() + 86400) * 1000)
    body = {"files": {"a.md": "A", "b.md": "B"}, "mtimes": {"a.md": old_ms, "b.md": future_ms}}
    assert alice_api.post(url, body, format="json").status_code == 200
    assert Path(store.path, "a.md").stat().st_mtime_ns // 1_000_000 == old_ms
    assert Path(store.path, "b.md").stat().st_mtime <= time.time()
    stray = alice_api.post(url, {"files": {"c.md": "C"}, "mtimes": {"d.md": 1}}, format="json")
    assert stray.status_code == 400
    assert stray.json()["error"]["details"] == {"mtimes": {"d.md": ["Not uploaded in this batch."]}}
    assert not Path(store.path, "c.md").exists()


def test_a_rewrite_that_keeps_the_mtime_and_size_is_still_mirrored(alice_api, store):
    """A client carries each file's mtime: a new text of the same length with the same mtime
    as the old one is still a change, for the listing, recall and the next sync's checksums."""
    url = f"/api/v1/stores/{store.pk}/batch"
    mtime = 1_700_000_000_000
    first = MEMORY.replace("real database", "live database")
    second = MEMORY.replace("real database", "mock database")
    for text in (first, second):
        body = {"files": {"feedback_db.md": text}, "mtimes": {"feedback_db.md": mtime}}
        answer = alice_api.post(url, body, format="json")
        assert answer.status_code == 200
        assert answer.json()["checksums"]["feedback_db.md"] == sha(text)
    [row] = alice_api.get(f"/api/v1/stores/{store.pk}/files/").json()["files"]
    assert (row["checksum"], row["description"]) == (sha(second), "Tests hit a mock database")


def test_batch_writes_only_changed_files(alice_api, store):
    url = f"/api/v1/stores/{store.pk}/batch"
    alice_api.post(url, {"files": {"a.md": "A", "b.md": "B"}}, format="json")
    mtime = Path(store.path, "a.md").stat().st_mtime_ns
    response = alice_api.post(
        url, {"files": {"a.md": "A", "b.md": "B2"}, "delete": ["c.md"]}, format="json"
    ).json()
    assert (response["written"], response["unchanged"], response["deleted"]) == (
        ["b.md"],
        ["a.md"],
        [],
    )
    assert Path(store.path, "a.md").stat().st_mtime_ns == mtime
    assert response["checksums"] == {"a.md": sha("A"), "b.md": sha("B2")}


def test_invalid_json_and_unknown_fields_get_400(alice_api, store):
    url = f"/api/v1/stores/{store.pk}/files/a.md"
    bad = alice_api.generic("PUT", url, b'{"content": "\xff"}', content_type="application/json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request"
    unknown = alice_api.put(url, {"content": "x", "mode": "force"}, format="json")
    assert unknown.status_code == 400
    assert unknown.json()["error"]["details"] == {"mode": ["Unknown field."]}
    surrogate = alice_api.generic(
        "PUT", url, b'{"content": "\\ud800"}', content_type="application/json"
    )
    assert surrogate.status_code == 400


@pytest.mark.parametrize("content", [5, 2.5, True])
def test_a_number_where_text_belongs_is_refused_not_written_as_text(alice_api, store, content):
    response = alice_api.put(
        f"/api/v1/stores/{store.pk}/files/a.md", {"content": content}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"content": ["Not a valid string."]}
    assert not Path(store.path, "a.md").exists()


def test_a_recall_with_numbers_for_its_words_or_keys_is_refused(alice_api):
    good = {"project": "acme/app", "query": "deploy"}
    assert alice_api.post("/api/v1/recall", good, format="json").status_code == 200
    for field, value in (("query", 123), ("already_surfaced", [1, 2])):
        response = alice_api.post("/api/v1/recall", {**good, field: value}, format="json")
        assert response.status_code == 400, response.json()
        assert field in response.json()["error"]["details"]


def test_other_users_stores_are_404_even_for_staff(bob_api, sam_api, store):
    for api in (bob_api, sam_api):
        assert api.get(f"/api/v1/stores/{store.pk}/files/").status_code == 404
        response = api.put(f"/api/v1/stores/{store.pk}/files/a.md", {"content": "x"}, format="json")
        assert response.status_code == 404
        assert api.get("/api/v1/stores/").json() == {"stores": []}
    assert list(Path(store.path).iterdir()) == []


def test_remember_and_forget_write_the_file_and_its_index_line(alice_api, store):
    response = alice_api.post(
        "/api/v1/remember",
        {
            "project": "acme/app",
            "name": "Real DB",
            "description": "Tests hit a real database",
            "type": "feedback",
            "body": "Use it.\n\n**Why:** x\n**How to apply:** y\n",
        },
        format="json",
    )
    assert response.status_code == 201
    key = response.json()["key"]
    assert key == "feedback_real_db.md"
    index = Path(store.path, "MEMORY.md").read_text()
    assert index == "- [Real DB](feedback_real_db.md) — Tests hit a real database\n"
    gone = alice_api.post("/api/v1/forget", {"project": "acme/app", "path": key}, format="json")
    assert gone.status_code == 204
    assert Path(store.path, "MEMORY.md").read_text() == ""
    assert not Path(store.path, key).exists()


def test_unknown_api_urls_are_json_404s(alice_api):
    response = alice_api.get("/api/v1/nothing-here")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("key", ["../x", ".git/hooks", "acme/..", "a/b/c", "has space"])
def test_project_keys_that_could_leave_the_team_repository_are_refused(alice_api, key):
    response = alice_api.post(
        "/api/v1/stores/resolve", {"project": key, "scope": "private"}, format="json"
    )
    assert response.status_code == 400
    assert "project" in response.json()["error"]["details"]
    remembered = alice_api.post(
        "/api/v1/remember", {"project": key, "name": "x", "description": "x"}, format="json"
    )
    assert remembered.status_code == 404
    assert not Project.objects.exists()
