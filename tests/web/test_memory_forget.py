"""Forgetting a memory: asked first, then the file and its index line go."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.web.memory_pages import INDEX, root, text, url

pytestmark = pytest.mark.django_db


def test_forgetting_asks_first(client, stores, alice):
    client.force_login(alice)
    response = client.get(url("memory_forget", stores.private, "user_role.md"))
    page = text(response)
    assert "Forget “Role”?" in page
    assert f"This deletes user_role.md from {stores.private.path}" in page
    assert (root(stores.private) / "user_role.md").exists()


def test_forgetting_deletes_the_file_and_its_index_line(client, stores, alice):
    directory = root(stores.private)
    client.force_login(alice)
    response = client.post(url("memory_forget", stores.private, "user_role.md"), follow=True)
    assert response.redirect_chain == [(reverse("store", args=[stores.private.pk]), 302)]
    assert "Forgot user_role.md: the file and its index line are gone." in text(response)
    assert not (directory / "user_role.md").exists()
    assert (directory / "MEMORY.md").read_text() == INDEX.replace(
        "- [Role](user_role.md) — who Alice is\n", ""
    )
    assert list(stores.private.files.values_list("path", flat=True)) == ["feedback_tests.md"]
    assert client.get(url("memory", stores.private, "user_role.md")).status_code == 404
    assert "Lines 4 / 200" in text(response)  # the meter follows (it was 5)


def test_the_message_after_forgetting_offers_undo(client, stores, alice):
    client.force_login(alice)
    response = client.post(url("memory_forget", stores.private, "user_role.md"), follow=True)
    page = response.content.decode()
    undo = re.search(r'<form method="post" action="([^"]+)" class="inline undo">', page)
    assert undo and "Undo</button>" in page
    response = client.post(undo.group(1), follow=True)
    assert "Restored user_role.md, with its index line." in text(response)
    assert (root(stores.private) / "user_role.md").exists()
    assert (
        "- [Role](user_role.md) — who Alice is" in (root(stores.private) / "MEMORY.md").read_text()
    )


def test_a_file_named_with_a_backslash_is_shown_forgotten_and_restored(client, stores, alice):
    """An agent on Linux made `back\\slash.md`: no key of memhub's may hold a backslash, but
    the file is the person's, so it is read, forgotten and restored (under a safe name)."""
    from memapp.stores.mirror import rescan_store
    from memapp.stores.models import TrashItem

    odd = "back\\slash.md"
    data = b"---\nname: Odd\ndescription: made on Linux\n---\nKeep me.\n"
    (root(stores.private) / odd).write_bytes(data)
    rescan_store(stores.private)
    client.force_login(alice)
    page = client.get(url("memory", stores.private, odd))
    assert page.status_code == 200
    assert "Keep me." in text(page)
    assert "This file's name is odd. Its name holds a backslash" in text(page)
    edit = client.get(url("memory_edit", stores.private, odd), follow=True)
    assert f"{odd} cannot be edited." in text(edit)
    assert client.get(url("memory_forget", stores.private, odd)).status_code == 200
    forgot = client.post(url("memory_forget", stores.private, odd), follow=True)
    assert f"Forgot {odd}" in text(forgot)
    assert not (root(stores.private) / odd).exists()
    item = TrashItem.objects.get(path=odd)
    restored = client.post(reverse("trash_restore", args=[stores.private.pk, item.pk]), follow=True)
    assert f"Restored {odd} as back-slash.md (its name had a backslash)" in text(restored)
    assert (root(stores.private) / "back-slash.md").read_bytes() == data


def _forgotten_and_restored(client, stores, alice, key: str, data: bytes):
    """`key` written with `data` and mirrored, forgotten on its page, restored from the Trash:
    the restore's page, and MEMORY.md as it was before the forget."""
    from memapp.stores.mirror import rescan_store
    from memapp.stores.models import TrashItem

    (root(stores.private) / key).write_bytes(data)
    rescan_store(stores.private)
    index = (root(stores.private) / "MEMORY.md").read_bytes()
    client.force_login(alice)
    client.post(url("memory_forget", stores.private, key), follow=True)
    item = TrashItem.objects.get(path=key)
    restored = client.post(reverse("trash_restore", args=[stores.private.pk, item.pk]), follow=True)
    return restored, index


def test_a_memory_no_index_line_can_name_is_forgotten_and_restored(client, stores, alice):
    """`a#b.md` is a memory (`#` would be a link's fragment in MEMORY.md, so it has no line):
    forgetting and restoring it put the bytes back and leave the index alone."""
    data = b"---\nname: Hash\ndescription: a hash in its name\n---\nKeep me.\n"
    restored, index = _forgotten_and_restored(client, stores, alice, "a#b.md", data)
    assert restored.status_code == 200
    assert "Restored a#b.md" in text(restored)
    assert (root(stores.private) / "a#b.md").read_bytes() == data
    assert (root(stores.private) / "MEMORY.md").read_bytes() == index


def test_restoring_a_memory_that_was_not_listed_lists_it_no_more_than_before(client, stores, alice):
    """A restore is an undo: a memory MEMORY.md did not list comes back without a line."""
    data = b"---\nname: Loose\ndescription: never indexed\ntype: project\n---\nKeep me.\n"
    _, index = _forgotten_and_restored(client, stores, alice, "project_loose.md", data)
    assert (root(stores.private) / "project_loose.md").read_bytes() == data
    assert (root(stores.private) / "MEMORY.md").read_bytes() == index
