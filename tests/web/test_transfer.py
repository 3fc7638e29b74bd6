"""Many memories at once: bulk forget (asked first), share and export; a store exported as a
zip and imported, every entry checked before anything is written."""

from __future__ import annotations

import io
import struct
import unicodedata
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from memapp.stores.history import timeline
from memapp.stores.models import TrashItem
from tests.memdir.test_secret_rules import fake_tokens
from tests.web.memory_pages import INDEX, root, text, url

pytestmark = pytest.mark.django_db

ROLE = "---\nname: Role\ndescription: Alice is a backend engineer\ntype: user\n---\nBody.\n"


def make_zip(entries: dict[str, bytes | str], symlinks: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in symlinks:
                info.external_attr = 0o120777 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def upload(client, store, data: bytes, **options):
    archive = SimpleUploadedFile("memory.zip", data, content_type="application/zip")
    return client.post(url("store_import", store), {"archive": archive, **options}, follow=True)


def zip_names(response) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture
def empty(stores, alice, tmp_path):
    """A second private store of alice's, empty: where imports go."""
    from memapp.stores.models import Store

    path = tmp_path / "other"
    path.mkdir()
    return Store.objects.create(
        kind="private",
        origin="managed",
        path=str(path),
        owner=alice,
        project=stores.private.project,
    )


# -- export ----------------------------------------------------------------------------------------


def test_a_store_exports_as_a_zip_of_its_files_and_index(client, stores, alice):
    client.force_login(alice)
    response = client.get(url("store_export", stores.private))
    assert response["Content-Disposition"].startswith('attachment; filename="')
    files = zip_names(response)
    assert files == {
        "feedback_tests.md": (root(stores.private) / "feedback_tests.md").read_bytes(),
        "user_role.md": ROLE.encode(),
        "MEMORY.md": INDEX.encode(),
    }


def test_ticked_memories_export_with_their_index_lines_only(client, stores, alice):
    client.force_login(alice)
    response = client.post(
        url("store_bulk", stores.private), {"action": "export", "paths": ["user_role.md"]}
    )
    assert zip_names(response) == {
        "user_role.md": ROLE.encode(),
        "MEMORY.md": b"- [Role](user_role.md) \xe2\x80\x94 who Alice is\n",
    }


def test_nobody_else_exports_or_imports_a_private_store(client, stores, bob):
    client.force_login(bob)
    assert client.get(url("store_export", stores.private)).status_code == 404
    assert upload(client, stores.private, make_zip({"a.md": "x"})).status_code == 404


# -- import ----------------------------------------------------------------------------------------


def test_an_export_imports_into_another_store_as_it_was(client, stores, empty, alice):
    client.force_login(alice)
    exported = b"".join(client.get(url("store_export", stores.private)).streaming_content)
    response = upload(client, empty, exported)
    assert "Imported 2 memories." in text(response)
    assert (root(empty) / "user_role.md").read_text() == ROLE
    assert (root(empty) / "MEMORY.md").read_text() == (
        "- [Real DB](feedback_tests.md) — no mocks\n- [Role](user_role.md) — who Alice is\n"
    )
    assert [v.via for v in timeline(empty, "user_role.md")] == ["import"]
    assert empty.files.count() == 2


BAD = {
    "../escape.md": "x",
    "/etc/evil.md": "x",
    "notes.txt": "x",
    "team/inside-another-store.md": "x",
    "huge.md": "a" * 250_001,
    "binary.md": b"\x00\x01",
    "latin1.md": b"caf\xe9",
    "link.md": "/etc/passwd",
    "docs/MEMORY.md": "- [x](x.md)\n",
}


def test_every_entry_is_checked_and_nothing_is_written_unless_all_pass(client, stores, alice):
    client.force_login(alice)
    good = {"project_good.md": "---\nname: Good\n---\nfine\n"}
    response = upload(client, stores.private, make_zip({**good, **BAD}, symlinks=("link.md",)))
    assert response.status_code == 400
    page = text(response)
    assert "9 files did not pass: nothing was imported" in page
    for expected in [
        "../escape.md:",
        "notes.txt: 'notes.txt' is not a memory file: not a Markdown (.md) file",
        "team/inside-another-store.md: 'team/inside-another-store.md' is not a memory file: "
        "inside a store of its own",
        "huge.md: 250,001 bytes; the limit is 250,000",
        "binary.md: contains NUL bytes",
        "latin1.md: not valid UTF-8",
        "link.md: a symbolic link, not a file",
        "docs/MEMORY.md: an index of another directory",
        "1 file passed.",
    ]:
        assert expected in page
    assert not (root(stores.private) / "project_good.md").exists()
    assert not (root(stores.private).parent / "escape.md").exists()


def test_the_entries_that_pass_are_imported_when_asked_to_skip_the_rest(client, stores, alice):
    client.force_login(alice)
    good = {"project_good.md": "---\nname: Good\ndescription: It passed\n---\nfine\n"}
    archive = make_zip({**good, **BAD}, symlinks=("link.md",))
    response = upload(client, stores.private, archive, skip_failing="on")
    assert "Imported 1 memory; 9 skipped:" in text(response)
    assert (root(stores.private) / "project_good.md").exists()
    assert (
        "- [Good](project_good.md) — It passed" in (root(stores.private) / "MEMORY.md").read_text()
    )


def test_the_first_check_finds_what_the_import_would_refuse(client, stores, alice):
    """A user memory (into team memory, without the tick) and a look-alike of a file the
    store has are listed at the first check, and skipped when asked to skip the rest: they
    once passed it and then refused the whole import."""
    client.force_login(alice)
    (root(stores.team) / "code_review.md").write_text("---\nname: Review\n---\nReview.\n")
    good = {"project_good.md": "---\nname: Good\ndescription: It passed\n---\nfine\n"}
    entries = {**good, "user_role.md": ROLE, "Code_Review.md": "---\nname: R\n---\nr\n"}
    page = text(upload(client, stores.team, make_zip(entries)))
    assert "2 files did not pass: nothing was imported" in page
    assert "user_role.md: a user memory: user memories are about a person" in page
    assert "Code_Review.md: " in page and "1 file passed." in page
    response = upload(client, stores.team, make_zip(entries), skip_failing="on")
    assert "Imported 1 memory; 2 skipped:" in text(response)
    assert (root(stores.team) / "project_good.md").exists()
    assert not (root(stores.team) / "user_role.md").exists()


RESUME_NFC = unicodedata.normalize("NFC", "résumé.md")
RESUME_NFD = unicodedata.normalize("NFD", "résumé.md")
CV = "---\nname: CV\ndescription: Alice's résumé\ntype: user\n---\nBody.\n"


def test_names_a_mac_zip_spells_decomposed_are_imported_composed(client, empty, alice):
    """As every write stores keys (docs/design.md §4): the file, its index line and its
    history all name the NFC key."""
    client.force_login(alice)
    index = f"- [CV]({RESUME_NFD}) — the zip's line\n"
    response = upload(client, empty, make_zip({RESUME_NFD: CV, "MEMORY.md": index}))
    assert "Imported 1 memory." in text(response)
    assert sorted(p.name for p in root(empty).iterdir()) == ["MEMORY.md", RESUME_NFC]
    assert (root(empty) / "MEMORY.md").read_text() == f"- [CV]({RESUME_NFC}) — Alice's résumé\n"
    assert [v.via for v in timeline(empty, RESUME_NFC)] == ["import"]


def test_a_zip_holding_one_name_in_two_forms_imports_neither_silently(client, empty, alice):
    client.force_login(alice)
    archive = make_zip({RESUME_NFC: CV, RESUME_NFD: CV.replace("Body", "Other")})
    response = upload(client, empty, archive)
    assert response.status_code == 400
    page = text(response)
    assert "1 file did not pass: nothing was imported" in page
    assert f"{RESUME_NFD}: unsafe memory key '{RESUME_NFD}' (decomposed)" in page
    assert f"[lookalike-duplicate]; the other is '{RESUME_NFC}'" in page
    assert list(root(empty).iterdir()) == []
    response = upload(client, empty, archive, skip_failing="on")
    assert "Imported 1 memory; 1 skipped:" in text(response)
    assert (root(empty) / RESUME_NFC).read_text() == CV


def test_a_zip_bomb_and_a_lying_header_are_refused(client, stores, alice):
    client.force_login(alice)
    bomb = make_zip({"bomb.md": "0" * 40_000_000})
    assert len(bomb) < 100_000
    assert "bomb.md: 40,000,000 bytes; the limit is 250,000" in text(
        upload(client, stores.private, bomb)
    )
    # The same, claiming in both headers to be ten bytes.
    liar = bytearray(make_zip({"liar.md": "0" * 400_000}))
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = liar.find(signature) + offset
        liar[at : at + 4] = struct.pack("<I", 10)
    page = text(upload(client, stores.private, bytes(liar)))
    assert "liar.md: cannot be unpacked" in page or "liar.md: over 250,000 bytes" in page
    assert not (root(stores.private) / "liar.md").exists()


def test_what_is_not_a_zip_is_refused_in_one_sentence(client, stores, alice):
    client.force_login(alice)
    assert "This is not a zip file." in text(upload(client, stores.private, b"hello"))


def test_secrets_are_never_imported(client, stores, alice):
    token = next(iter(fake_tokens(1).values()))
    client.force_login(alice)
    response = upload(client, stores.private, make_zip({"reference_ci.md": f"token:\n{token}\n"}))
    page = text(response)
    assert "reference_ci.md: holds what looks like a secret (" in page and "on line 2)" in page
    assert token not in response.content.decode()


def test_existing_memories_are_kept_unless_replacing_is_asked_for(client, stores, alice):
    client.force_login(alice)
    changed = make_zip({"user_role.md": ROLE.replace("backend", "frontend")})
    response = upload(client, stores.private, changed)
    assert "Imported 0 memories; 1 kept as they were (they differ: user_role.md)." in text(response)
    assert (root(stores.private) / "user_role.md").read_text() == ROLE
    upload(client, stores.private, changed, replace="on")
    assert "frontend" in (root(stores.private) / "user_role.md").read_text()
    assert [v.via for v in timeline(stores.private, "user_role.md")] == ["import", "disk"]


# -- bulk ------------------------------------------------------------------------------------------


def test_bulk_forget_asks_first_then_moves_them_to_the_trash(client, stores, alice):
    client.force_login(alice)
    ticked = {"action": "forget", "paths": ["user_role.md", "feedback_tests.md"]}
    response = client.post(url("store_bulk", stores.private), ticked)
    assert "Forget 2 memories?" in text(response)
    assert (root(stores.private) / "user_role.md").exists()
    response = client.post(
        url("store_bulk", stores.private), {**ticked, "confirm": "yes"}, follow=True
    )
    assert "Forgot 2 memories. They wait in the trash for 30 days: Open the trash." in text(
        response
    )
    assert sorted(TrashItem.objects.values_list("path", flat=True)) == [
        "feedback_tests.md",
        "user_role.md",
    ]
    assert (
        root(stores.private) / "MEMORY.md"
    ).read_text() == "# Alice's memory\n\nNotes kept by hand stay as they are.  \n"


def test_bulk_share_copies_the_ticked_memories_to_the_team(client, stores, alice):
    stores.team.project.members.add(alice)
    client.force_login(alice)
    page = client.get(url("store", stores.private)).content.decode()
    assert 'value="share"' in page and 'name="paths" value="user_role.md"' in page
    ticked = {"action": "share", "paths": ["user_role.md", "feedback_tests.md"]}
    page = text(client.post(url("store_bulk", stores.private), ticked))
    assert "Share 2 memories with the team?" in page and "What teammates will see" in page
    assert not (root(stores.team) / "feedback_tests.md").exists()  # it asks first
    ticked["confirm"] = "yes"
    response = client.post(url("store_bulk", stores.private), ticked, follow=True)
    assert "Nothing was shared: user_role.md: user memories are about a person" in text(response)
    assert not (root(stores.team) / "feedback_tests.md").exists()
    ticked["allow_user"] = "yes"  # the person ticks that they mean it
    response = client.post(url("store_bulk", stores.private), ticked, follow=True)
    assert "Shared 2 with the team: feedback_tests.md, user_role.md." in text(response)
    assert (root(stores.team) / "user_role.md").read_text() == ROLE


def test_nothing_ticked_says_so(client, stores, alice):
    client.force_login(alice)
    response = client.post(url("store_bulk", stores.private), {"action": "forget"}, follow=True)
    assert "Tick the memories first." in text(response)
    assert reverse("store", args=[stores.private.pk]) == response.redirect_chain[-1][0]
