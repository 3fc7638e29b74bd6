"""Keys on the way in (docs/design.md §4): stored in NFC; a key a reader cannot read as written,
the index's look-alikes and keys one file system would take for another are refused with the
rule's name, by the file API, its batch and the team memory protocol alike."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from memapp.stores.models import Project, Store
from memapp.stores.projects import resolve_store

pytestmark = pytest.mark.django_db

NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")


@pytest.fixture
def store(alice):
    return resolve_store(alice, "acme/app", "private")


def put(api, store, key: str, content: str = "x\n"):
    return api.put(f"/api/v1/stores/{store.pk}/files/{key}", {"content": content}, format="json")


def refusal(response) -> str:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_key"
    assert f"[{error['details']['rule']}]" in error["message"]  # the message names the rule
    return error["details"]["rule"]


def test_a_decomposed_key_is_stored_composed(alice_api, store):
    assert put(alice_api, store, NFD).status_code == 201
    assert os.listdir(store.path) == [NFC]
    again = put(alice_api, store, NFC, "y\n")
    assert again.status_code == 201  # the same file, not a second one
    assert os.listdir(store.path) == [NFC]
    assert Path(store.path, NFC).read_text() == "y\n"


@pytest.mark.parametrize(
    ("existing", "new"),
    [("notes.md", "Notes.md"), ("m.md", "ｍ.md"), ("team-a/x.md", "TEAM-A/x.md")],
)
def test_a_look_alike_of_a_key_the_store_has_is_refused(alice_api, store, existing, new):
    assert put(alice_api, store, existing).status_code == 201
    assert refusal(put(alice_api, store, new)) == "lookalike-duplicate"
    batch = alice_api.post(
        f"/api/v1/stores/{store.pk}/batch", {"files": {new: "y\n"}}, format="json"
    )
    assert refusal(batch) == "lookalike-duplicate"
    replaced = alice_api.post(
        f"/api/v1/stores/{store.pk}/batch",
        {"files": {new: "y\n"}, "delete": [existing]},
        format="json",
    )
    assert replaced.status_code == 200  # a rename in one batch: the old key goes
    assert put(alice_api, store, new, "z\n").status_code == 201  # rewriting it is fine


def test_a_file_already_on_disk_in_nfd_is_not_joined_by_its_nfc_twin(alice_api, store):
    Path(store.path).mkdir(parents=True, exist_ok=True)
    Path(store.path, NFD).write_text("from a Mac\n")
    assert refusal(put(alice_api, store, NFC)) == "lookalike-duplicate"
    assert os.listdir(store.path) == [NFD]
    assert put(alice_api, store, NFD, "edited\n").status_code == 201  # its own spelling
    assert os.listdir(store.path) == [NFD]
    assert Path(store.path, NFD).read_text() == "edited\n"


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("\u202edm.exe.md", "invisible-character"),
        ("a\u200bb.md", "invisible-character"),
        ("memory.md", "index-lookalike"),
        ("sub/Memory.md", "index-lookalike"),
    ],
)
def test_keys_a_reader_would_misread_are_refused(alice_api, store, key, rule):
    assert refusal(put(alice_api, store, key)) == rule
    assert not Path(store.path).exists() or os.listdir(store.path) == []


def test_the_team_protocol_refuses_a_look_alike(alice, alice_api):
    project = Project.objects.create(key="acme/team", repo_slug="acme/team")
    project.members.add(alice)
    url = "/api/claude_code/team_memory?repo=acme%2Fteam"
    assert alice_api.put(url, {"entries": {"notes.md": "x\n"}}, format="json").status_code == 200
    response = alice_api.put(url, {"entries": {"NOTES.md": "y\n"}}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_key"
    both = alice_api.put(url, {"entries": {"a.md": "x\n", "A.md": "y\n"}}, format="json")
    assert both.status_code == 400


def test_remember_names_a_new_memory_beside_its_look_alike(alice_api, store):
    assert put(alice_api, store, "Project_Deploy.md").status_code == 201
    body = {"store": store.pk, "name": "Deploy", "description": "d", "type": "project"}
    response = alice_api.post("/api/v1/remember", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["key"] == "project_deploy-2.md"


def test_a_file_already_named_so_can_still_be_read_and_removed(alice_api, store):
    Path(store.path).mkdir(parents=True, exist_ok=True)
    Path(store.path, "\u202edm.exe.md").write_text("found on disk\n")
    url = f"/api/v1/stores/{store.pk}/files/\u202edm.exe.md"
    assert alice_api.get(url).json()["content"] == "found on disk\n"
    assert refusal(put(alice_api, store, "\u202edm.exe.md", "y\n")) == "invisible-character"
    assert alice_api.delete(url).status_code == 204
    assert os.listdir(store.path) == []


def test_a_batch_sending_one_name_in_nfc_and_in_nfd_is_refused_whole(alice_api, store):
    """Both spellings are one file once stored in NFC: writing both kept one text only."""
    batch = alice_api.post(
        f"/api/v1/stores/{store.pk}/batch",
        {"files": {NFC: "composed\n", NFD: "decomposed\n", "other.md": "x\n"}},
        format="json",
    )
    assert refusal(batch) == "lookalike-duplicate"
    error = batch.json()["error"]
    assert (error["details"]["key"], error["details"]["beside"]) == (NFD, NFC)
    assert f"{NFD!r} (decomposed)" in error["message"]
    assert f"the other is {NFC!r}" in error["message"]
    assert not Path(store.path).exists() or os.listdir(store.path) == []


def test_a_batch_deleting_a_file_it_writes_in_another_form_is_refused(alice_api, store):
    assert put(alice_api, store, NFC, "kept\n").status_code == 201
    batch = alice_api.post(
        f"/api/v1/stores/{store.pk}/batch",
        {"files": {NFD: "new\n"}, "delete": [NFC]},
        format="json",
    )
    assert refusal(batch) == "lookalike-duplicate"
    assert Path(store.path, NFC).read_text() == "kept\n"


def test_the_team_protocol_refuses_one_name_in_two_forms_and_creates_nothing(alice, alice_api):
    project = Project.objects.create(key="acme/forms", repo_slug="acme/forms")
    project.members.add(alice)
    url = "/api/claude_code/team_memory?repo=acme%2Fforms"
    response = alice_api.put(url, {"entries": {NFC: "one\n", NFD: "two\n"}}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_key"
    assert "[lookalike-duplicate]" in error["message"]
    assert {error["details"]["key"], error["details"]["beside"]} == {NFC, NFD}
    assert not Store.objects.filter(project=project).exists()  # a refused PUT makes no store


@pytest.mark.parametrize("new", ["sub./y.md", "sub /y.md", "SUB/y.md", "Sub/deeper/y.md"])
def test_a_folder_spelt_like_one_the_store_has_is_refused(alice_api, store, new):
    """macOS and Windows would put the file in the folder `sub` the store already has."""
    assert put(alice_api, store, "sub/x.md").status_code == 201
    response = put(alice_api, store, new)
    assert refusal(response) == "lookalike-duplicate"
    assert response.json()["error"]["details"]["beside"] == "sub/"
    assert os.listdir(store.path) == ["sub"]
    assert put(alice_api, store, "sub/y.md").status_code == 201  # its own spelling is fine


def test_two_folders_of_one_batch_spelt_alike_are_refused(alice_api, store):
    batch = alice_api.post(
        f"/api/v1/stores/{store.pk}/batch",
        {"files": {"notes/a.md": "a\n", "Notes/b.md": "b\n"}},
        format="json",
    )
    assert refusal(batch) == "lookalike-duplicate"
    assert batch.json()["error"]["details"] == {
        "key": "Notes/b.md",
        "rule": "lookalike-duplicate",
        "beside": "notes/",
    }


def test_files_in_look_alike_folders_already_on_disk_stay_readable_and_removable(alice_api, store):
    for folder in ("sub", "sub."):
        Path(store.path, folder).mkdir(parents=True)
        Path(store.path, folder, "x.md").write_text(f"in {folder}\n")
    files = f"/api/v1/stores/{store.pk}/files"
    assert alice_api.get(f"{files}/sub./x.md").json()["content"] == "in sub.\n"
    assert put(alice_api, store, "sub./x.md", "edited\n").status_code == 201
    assert put(alice_api, store, "sub./y.md", "new\n").status_code == 201  # a folder it has
    assert alice_api.delete(f"{files}/sub./x.md").status_code == 204
    assert Path(store.path, "sub", "x.md").read_text() == "in sub\n"
