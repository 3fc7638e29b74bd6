"""A memory's history page, a version's page, restoring, and a store's trash."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memapp.stores.actions import do_forget_memory, do_save_memory
from memapp.stores.history import timeline
from memapp.stores.mirror import rescan_store
from memapp.stores.models import TrashItem
from tests.web.memory_pages import INDEX, root, text, url

pytestmark = pytest.mark.django_db

ORIGINAL = "---\nname: Role\ndescription: Alice is a backend engineer\ntype: user\n---\nBody.\n"


def wrong_edit(store, user) -> None:
    do_save_memory(
        store,
        user,
        name="Role",
        description="Alice is a frontend engineer",
        memory_type="user",
        body="Body.\nA wrong line.\n",
        path="user_role.md",
    )


def history_url(store, path: str = "user_role.md", **query) -> str:
    base = reverse("memory_history", kwargs={"store_id": store.pk, "path": path})
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def restore_forms(response) -> dict[str, str]:
    """version id -> the checksum the restore form carries."""
    html = response.content.decode()
    return dict(
        re.findall(
            r'history/(\d+)/restore/" id="restore-\d+" class="bare">'
            r'<input type="hidden" name="csrfmiddlewaretoken" value="[^"]+">'
            r'<input type="hidden" name="base" value="([^"]*)">',
            html,
        )
    )


def test_the_memory_page_links_its_history(client, stores, alice):
    client.force_login(alice)
    page = client.get(url("memory", stores.private, "user_role.md")).content.decode()
    assert f'href="{history_url(stores.private)}"' in page
    assert "Recalled never" in text(client.get(url("memory", stores.private, "user_role.md")))


def test_the_history_lists_each_version_with_who_and_how(client, stores, alice):
    wrong_edit(stores.private, alice)
    client.force_login(alice)
    page = text(client.get(history_url(stores.private)))
    assert "History of user_role.md" in page
    assert "2 versions, newest first." in page
    assert "current alice · the web UI" in page
    assert "found on disk · first seen" in page
    assert page.count("Restore this version") == 1  # never offered for the current version


def test_two_versions_compare_as_a_diff(client, stores, alice):
    wrong_edit(stores.private, alice)
    new, old = timeline(stores.private, "user_role.md")
    client.force_login(alice)
    response = client.get(history_url(stores.private, a=old.pk, b=new.pk))
    html = response.content.decode()
    assert "2 lines added · 1 line removed" in text(response)
    assert '<tr class="del"><td class="ln">3</td>' in html
    assert "Alice is a <mark>backend</mark> engineer" in html
    assert "Alice is a <mark>frontend</mark> engineer" in html
    assert '<tr class="add"><td class="ln"></td><td class="ln">7</td>' in html  # the wrong line


def test_restoring_the_previous_version_undoes_a_wrong_edit(client, stores, alice):
    wrong_edit(stores.private, alice)
    new, old = timeline(stores.private, "user_role.md")
    client.force_login(alice)
    forms = restore_forms(client.get(history_url(stores.private)))
    assert forms == {str(old.pk): f"sha256:{new.sha256}"}
    response = client.post(
        reverse(
            "memory_version_restore",
            kwargs={"store_id": stores.private.pk, "path": "user_role.md", "version_id": old.pk},
        ),
        {"base": forms[str(old.pk)]},
        follow=True,
    )
    assert response.redirect_chain == [(url("memory", stores.private, "user_role.md"), 302)]
    assert "The version it replaced is kept in the history." in text(response)
    assert (root(stores.private) / "user_role.md").read_text() == ORIGINAL
    assert (root(stores.private) / "MEMORY.md").read_text() == INDEX  # its line as it was
    assert len(timeline(stores.private, "user_role.md")) == 3


def test_a_restore_against_a_file_changed_meanwhile_writes_nothing(client, stores, alice):
    wrong_edit(stores.private, alice)
    new, old = timeline(stores.private, "user_role.md")
    client.force_login(alice)
    (root(stores.private) / "user_role.md").write_text("---\nname: Agent's\n---\nnewer\n")
    response = client.post(
        reverse(
            "memory_version_restore",
            kwargs={"store_id": stores.private.pk, "path": "user_role.md", "version_id": old.pk},
        ),
        {"base": f"sha256:{new.sha256}"},
        follow=True,
    )
    assert "Nothing was restored: 'user_role.md' changed on the server" in text(response)
    assert (root(stores.private) / "user_role.md").read_text().endswith("newer\n")


def test_a_version_page_shows_its_text_and_what_it_changed(client, stores, alice):
    wrong_edit(stores.private, alice)
    new, old = timeline(stores.private, "user_role.md")
    client.force_login(alice)
    response = client.get(
        reverse(
            "memory_version",
            kwargs={"store_id": stores.private.pk, "path": "user_role.md", "version_id": new.pk},
        )
    )
    page = text(response)
    assert "A wrong line." in page
    assert "Status the current version" in page
    assert "What changed from the version before" in page


@pytest.mark.parametrize("who", ["bob", "charlie", "sam"])
def test_nobody_else_sees_a_private_memorys_history_or_trash(client, stores, alice, who, request):
    do_forget_memory(stores.private, alice, "user_role.md")
    client.force_login(request.getfixturevalue(who))
    assert client.get(history_url(stores.private)).status_code == 404
    assert client.get(reverse("trash", args=[stores.private.pk])).status_code == 404
    item = TrashItem.objects.get()
    restore = reverse("trash_restore", args=[stores.private.pk, item.pk])
    assert client.post(restore).status_code == 404
    assert not (root(stores.private) / "user_role.md").exists()


def test_a_forgotten_memory_waits_in_the_trash_and_comes_back(client, stores, alice):
    client.force_login(alice)
    assert "It waits in the store's trash for 30 days" in text(
        client.get(url("memory_forget", stores.private, "user_role.md"))
    )
    client.post(url("memory_forget", stores.private, "user_role.md"))
    trash = text(client.get(reverse("trash", args=[stores.private.pk])))
    assert "Role Alice is a backend engineer user_role.md" in trash
    assert "alice · the web UI" in trash
    assert "Trash (1)" in text(client.get(url("store", stores.private)))
    history = text(client.get(history_url(stores.private)))
    assert "This memory is not in the store now (it was deleted by alice" in history
    item = TrashItem.objects.get()
    response = client.post(reverse("trash_restore", args=[stores.private.pk, item.pk]), follow=True)
    assert "Restored user_role.md, with its index line." in text(response)
    assert (root(stores.private) / "user_role.md").read_text() == ORIGINAL
    assert "The trash is empty." in text(client.get(reverse("trash", args=[stores.private.pk])))


def test_a_memory_with_no_history_has_no_history_page(client, stores, alice):
    client.force_login(alice)
    assert client.get(history_url(stores.private, path="never.md")).status_code == 404


def test_memory_md_has_a_history_page_with_diffs_and_restore(client, stores, alice):
    index = root(stores.private) / "MEMORY.md"
    wrong_edit(stores.private, alice)  # rewrites Role's line from the new description
    wrong = index.read_text()
    client.force_login(alice)
    store_page = client.get(url("store", stores.private)).content.decode()
    assert f'href="{history_url(stores.private, "MEMORY.md")}" id="index-history"' in store_page
    response = client.get(history_url(stores.private, "MEMORY.md"))
    page = text(response)
    assert "History of MEMORY.md" in page
    assert "2 versions, newest first." in page
    assert "current alice · the web UI · the line of user_role.md" in page
    assert "found on disk · first seen" in page
    assert "History of MEMORY.md · memhub" in page
    new, old = timeline(stores.private, "MEMORY.md")
    compared = client.get(history_url(stores.private, "MEMORY.md", a=old.pk, b=new.pk))
    assert "1 line added · 1 line removed" in text(compared)
    assert "[Role](user_role.md) — Alice is a frontend engineer" in text(compared)
    forms = restore_forms(response)
    assert forms == {str(old.pk): f"sha256:{new.sha256}"}
    restore = reverse(
        "memory_version_restore",
        kwargs={"store_id": stores.private.pk, "path": "MEMORY.md", "version_id": old.pk},
    )
    done = client.post(restore, {"base": forms[str(old.pk)]}, follow=True)
    assert done.redirect_chain == [(url("store", stores.private) + "#index", 302)]
    assert "The version it replaced is kept in the history." in text(done)
    assert index.read_text() == INDEX
    # …and undone the same way: the replaced version is one Restore away.
    again = client.get(history_url(stores.private, "MEMORY.md"))
    forms = restore_forms(again)
    replaced = timeline(stores.private, "MEMORY.md")[1]
    client.post(
        reverse(
            "memory_version_restore",
            kwargs={"store_id": stores.private.pk, "path": "MEMORY.md", "version_id": replaced.pk},
        ),
        {"base": forms[str(replaced.pk)]},
    )
    assert index.read_text() == wrong
    assert len(timeline(stores.private, "MEMORY.md")) == 4


def test_a_restore_of_memory_md_against_an_index_changed_meanwhile_writes_nothing(
    client, stores, alice
):
    index = root(stores.private) / "MEMORY.md"
    wrong_edit(stores.private, alice)
    client.force_login(alice)
    response = client.get(history_url(stores.private, "MEMORY.md"))
    new, old = timeline(stores.private, "MEMORY.md")
    index.write_text("# Changed by an agent meanwhile\n")
    restore = reverse(
        "memory_version_restore",
        kwargs={"store_id": stores.private.pk, "path": "MEMORY.md", "version_id": old.pk},
    )
    done = client.post(restore, {"base": restore_forms(response)[str(old.pk)]}, follow=True)
    assert "Nothing was restored: 'MEMORY.md' changed on the server" in text(done)
    assert index.read_text() == "# Changed by an agent meanwhile\n"


@pytest.mark.parametrize("who", ["bob", "charlie", "sam"])
def test_nobody_else_sees_a_private_index_s_history(client, stores, alice, who, request):
    wrong_edit(stores.private, alice)
    client.force_login(request.getfixturevalue(who))
    assert client.get(history_url(stores.private, "MEMORY.md")).status_code == 404


def test_one_trash_lists_every_store_the_person_sees(client, stores, alice, bob):
    do_forget_memory(stores.private, alice, "user_role.md")
    do_forget_memory(stores.team, alice, "project_release.md")
    client.force_login(alice)
    page = text(client.get(reverse("trash_all")))
    assert "user_role.md" in page and "project_release.md" in page
    assert f"{stores.private.project} · {stores.private.label}" in page
    assert "The trash of all your stores" in text(
        client.get(reverse("trash", args=[stores.private.pk]))
    )
    stores.team.project.members.add(bob)
    client.force_login(bob)  # a teammate: the team's trash, never alice's private one
    page = text(client.get(reverse("trash_all")))
    assert "project_release.md" in page and "user_role.md" not in page


ODD_BYTES = {
    "nul_bytes.md": b"---\nname: Nul\n---\nbefore\x00after\n",
    "binary.md": b"---\nname: Latin-1\n---\ncaf\xe9 \xff\xfe\n",
    "big.md": b"---\nname: Big\n---\n" + b"x" * 300_000 + b"\n",
}


@pytest.mark.parametrize("name", ODD_BYTES)
def test_a_forgotten_file_comes_back_byte_for_byte_whatever_it_holds(client, stores, alice, name):
    """A restore is an undo: bytes today's write checks refuse (NUL, not UTF-8, over the size
    limit) come back as they were."""
    target = root(stores.private) / name
    target.write_bytes(ODD_BYTES[name])
    rescan_store(stores.private)
    client.force_login(alice)
    client.post(url("memory_forget", stores.private, name))
    assert not target.exists()
    item = TrashItem.objects.get(path=name)
    response = client.post(reverse("trash_restore", args=[stores.private.pk, item.pk]), follow=True)
    assert f"Restored {name}" in text(response)
    assert "Nothing was restored" not in text(response)
    assert target.read_bytes() == ODD_BYTES[name]


def test_a_version_that_is_not_utf8_is_restored_byte_for_byte(client, stores, alice):
    target = root(stores.private) / "binary.md"
    target.write_bytes(ODD_BYTES["binary.md"])
    rescan_store(stores.private)
    target.write_text("---\nname: Fixed\n---\nReplaced by an agent.\n")
    rescan_store(stores.private)
    _new, old = timeline(stores.private, "binary.md")
    client.force_login(alice)
    forms = restore_forms(client.get(history_url(stores.private, "binary.md")))
    restore = reverse(
        "memory_version_restore",
        kwargs={"store_id": stores.private.pk, "path": "binary.md", "version_id": old.pk},
    )
    response = client.post(restore, {"base": forms[str(old.pk)]}, follow=True)
    assert "Nothing was restored" not in text(response)
    assert target.read_bytes() == ODD_BYTES["binary.md"]
