"""Editing a memory: the file and its index line on disk, warnings, conflicts. The test client
submits forms as a browser without JavaScript does."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from memapp.stores.history import timeline
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Store
from tests.memdir.test_secret_rules import fake_tokens
from tests.web.memory_pages import INDEX, base_sha256, root, sha256, text, url

pytestmark = pytest.mark.django_db


def edit(client, store: Store, path: str, **fields):
    form = client.get(url("memory_edit", store, path))
    data = {"base_sha256": base_sha256(form), **fields}
    return client.post(url("memory_edit", store, path), data)


def save_after(client, user, store: Store, path: str, meanwhile, fields: dict):
    """Open the edit form, let `meanwhile` change the file on disk, then save `fields`."""
    client.force_login(user)
    page = client.get(url("memory_edit", store, path))
    meanwhile()
    return client.post(
        url("memory_edit", store, path), {**fields, "base_sha256": base_sha256(page)}
    )


def test_the_edit_form_starts_from_the_file_on_disk(client, stores, alice):
    client.force_login(alice)
    response = client.get(url("memory_edit", stores.private, "feedback_tests.md"))
    html = response.content.decode()
    assert 'name="name" value="Real DB"' in html
    assert 'name="description" value="Tests hit a real database"' in html
    assert '<option value="feedback" selected>feedback</option>' in html
    assert ">\nBody.\n</textarea>" in html
    assert base_sha256(response) == sha256(root(stores.private) / "feedback_tests.md")


def test_saving_rewrites_the_file_its_index_line_and_the_mirror(client, stores, alice):
    directory = root(stores.private)
    target = directory / "feedback_tests.md"
    inode = target.stat().st_ino
    client.force_login(alice)
    body = "Use the real database.\n\n**Why:** mocks hid a bug.\n**How to apply:** always.\n"
    response = edit(
        client,
        stores.private,
        "feedback_tests.md",
        name="Real DB",
        description="Integration tests hit a real database",
        type="feedback",
        body=body,
    )
    assert response.status_code == 302
    assert response["Location"] == url("memory", stores.private, "feedback_tests.md")
    assert target.read_text() == (
        "---\nname: Real DB\ndescription: Integration tests hit a real database\n"
        f"type: feedback\n---\n{body}"
    )
    assert target.stat().st_ino != inode  # a new file renamed over the old one
    assert sorted(p.name for p in directory.iterdir()) == [
        "MEMORY.md",
        "feedback_tests.md",
        "team",
        "user_role.md",
    ]
    assert (directory / "MEMORY.md").read_text() == INDEX.replace(
        "- [Real DB](feedback_tests.md) — no mocks",
        "- [Real DB](feedback_tests.md) — Integration tests hit a real database",
    )
    row = stores.private.files.get(path="feedback_tests.md")
    assert row.description == "Integration tests hit a real database"
    assert row.checksum == sha256(target)
    assert row.missing_sections == []
    page = client.get(response["Location"])
    assert "Saved feedback_tests.md." in text(page)
    assert "Integration tests hit a real database" in text(page)


def test_saving_keeps_the_metadata_form_a_file_was_written_in(client, stores, alice):
    directory = root(stores.private)
    target = directory / "real-db.md"
    target.write_text(
        "---\nname: real-db\ndescription: Tests hit a real database\n"
        "metadata:\n  type: feedback\nsource: session-42\n---\nOld body.\n"
    )
    rescan_store(stores.private)
    client.force_login(alice)
    body = "No mocks.\n\n**Why:** a bug.\n**How to apply:** always.\n"
    response = edit(
        client,
        stores.private,
        "real-db.md",
        name="real-db",
        description="Tests hit a real database, never mocks",
        type="feedback",
        body=body,
    )
    assert response.status_code == 302
    assert target.read_text() == (
        "---\nname: real-db\ndescription: Tests hit a real database, never mocks\n"
        f"metadata:\n  type: feedback\nsource: session-42\n---\n{body}"
    )
    assert (directory / "MEMORY.md").read_text() == INDEX + (
        "- [real-db](real-db.md) — Tests hit a real database, never mocks\n"
    )


def test_a_body_typed_in_a_browser_keeps_unix_line_endings(client, stores, alice):
    client.force_login(alice)
    response = edit(
        client,
        stores.private,
        "user_role.md",
        name="Role",
        description="Alice is a backend engineer",
        type="user",
        body="Line one.\r\nLine two.\r\n",
    )
    assert response.status_code == 302
    assert (
        (root(stores.private) / "user_role.md")
        .read_bytes()
        .endswith(b"---\nLine one.\nLine two.\n")
    )


def test_warnings_hold_back_the_first_save_and_save_anyway_saves(client, stores, alice):
    team = stores.team
    target = root(team) / "project_release.md"
    before = target.read_bytes()
    client.force_login(alice)
    fields = {
        "name": "Release",
        "description": "Release freeze",
        "type": "project",
        "body": "The freeze starts next Tuesday.\n",
    }
    response = edit(client, team, "project_release.md", **fields)
    assert response.status_code == 200
    page = text(response)
    assert (
        "Missing **Why:** — project memories should say why (an incident, a preference). "
        "Missing **How to apply:** — project memories should say when and where it applies. "
        'Relative date "next Tuesday": project memories must use absolute dates (e.g. 2026-03-05).'
    ) in page
    assert "Save anyway" in page
    assert target.read_bytes() == before
    # The form keeps what was typed.
    assert "The freeze starts next Tuesday." in page

    response = client.post(
        url("memory_edit", team, "project_release.md"),
        {**fields, "base_sha256": base_sha256(response), "save_anyway": "1"},
    )
    assert response.status_code == 302
    assert target.read_text().endswith("---\nThe freeze starts next Tuesday.\n")
    assert team.files.get(path="project_release.md").relative_dates == ["next Tuesday"]


def test_the_edit_form_shows_what_the_memory_is_warned_of_before_a_keystroke(client, stores, alice):
    """A user memory already in a team store: the warning is on the page as it opens, not
    only after typing (htmx sent the lint on input alone)."""
    team = stores.team
    role = "---\nname: Role\ndescription: Bob leads\ntype: user\n---\nBob leads the team.\n"
    (root(team) / "user_bob.md").write_text(role)
    rescan_store(team)
    client.force_login(alice)
    page = text(client.get(url("memory_edit", team, "user_bob.md")))
    assert "User memories are private" in page
    assert "Save anyway" in page


def test_a_save_after_the_file_was_deleted_keeps_what_was_typed(client, stores, alice):
    """An agent deleted the file while it was being edited: the save says so and gives back
    the typed text in the new-memory form, which saves it again."""
    target = root(stores.private) / "user_role.md"
    fields = {
        "name": "Role",
        "description": "Alice leads the backend team",
        "type": "user",
        "body": "Typed while the file went away.\n",
    }
    response = save_after(client, alice, stores.private, "user_role.md", target.unlink, fields)
    assert response.status_code == 409
    shown = text(response)
    assert "user_role.md was deleted while you edited it, so nothing was saved" in shown
    assert "Typed while the file went away." in shown
    assert f'action="{url("memory_create", stores.private)}"' in response.content.decode()
    saved = client.post(url("memory_create", stores.private), {**fields, "base_sha256": ""})
    assert saved.status_code == 302
    assert "Typed while the file went away." in target.read_text()


def test_a_user_memory_saves_without_warnings(client, stores, alice):
    client.force_login(alice)
    response = edit(
        client,
        stores.private,
        "user_role.md",
        name="Role",
        description="Alice leads the backend team",
        type="user",
        body="She started next Tuesday.\n",  # relative dates only matter in project memories
    )
    assert response.status_code == 302


def test_a_file_changed_on_disk_after_the_form_opened_is_not_overwritten(client, stores, alice):
    target = root(stores.private) / "feedback_tests.md"
    theirs = (
        "---\nname: Real DB\ndescription: Tests hit a real database\ntype: feedback\n---\n"
        "An agent added this line.\n"
    )
    mine = {
        "name": "Real DB",
        "description": "Tests hit a real database (edited)",
        "type": "feedback",
        "body": "My edit.\n\n**Why:** x.\n**How to apply:** y.\n",
    }
    response = save_after(
        client, alice, stores.private, "feedback_tests.md", lambda: target.write_text(theirs), mine
    )
    assert response.status_code == 409
    assert target.read_text() == theirs
    page = text(response)
    assert "Nothing was overwritten." in page
    html = response.content.decode()
    # A diff from the disk's version to mine, not two blobs.
    assert "5 lines added · 2 lines removed" in page
    assert "description: Tests hit a real database <mark>(edited)</mark>" in html
    assert (
        '<span class="visually-hidden">removed: </span><mark>An agent added this line</mark>.'
        in html
    )
    assert '<span class="visually-hidden">added: </span><mark>My edit</mark>.' in html
    assert (
        '<button type="submit" name="keep_disk" value="1" class="secondary">'
        "Keep the version on disk</button>"
    ) in html
    assert (root(stores.private) / "MEMORY.md").read_text() == INDEX

    # "Replace … with mine" submits the conflict page's form, based on the version on disk now.
    assert base_sha256(response) == sha256(target)
    resolved = client.post(
        url("memory_edit", stores.private, "feedback_tests.md"),
        {**mine, "base_sha256": base_sha256(response), "save_anyway": "1"},
    )
    assert resolved.status_code == 302
    assert target.read_text().endswith(f"---\n{mine['body']}")
    assert "description: Tests hit a real database (edited)\n" in target.read_text()


def test_keeping_the_version_on_disk_keeps_the_other_edit_restorable(client, stores, alice):
    target = root(stores.private) / "feedback_tests.md"
    theirs = target.read_text() + "Tab A's line.\n"
    mine = {"name": "Real DB", "description": "Mine", "type": "feedback", "body": "Tab B.\n"}
    conflict = save_after(
        client, alice, stores.private, "feedback_tests.md", lambda: target.write_text(theirs), mine
    )
    kept = client.post(
        url("memory_edit", stores.private, "feedback_tests.md"),
        {**mine, "base_sha256": base_sha256(conflict), "keep_disk": "1"},
        follow=True,
    )
    assert target.read_text() == theirs
    assert "Your edit is in its history, marked not kept" in text(kept)
    history = client.get(url("memory_history", stores.private, "feedback_tests.md"))
    assert "an edit not kept: the version on disk was kept" in text(history)
    latest, not_kept = list(timeline(stores.private, "feedback_tests.md"))[:2]
    assert not_kept.note == "an edit not kept: the version on disk was kept"
    page = reverse(
        "memory_version",
        kwargs={
            "store_id": stores.private.pk,
            "path": "feedback_tests.md",
            "version_id": not_kept.pk,
        },
    )
    version = client.get(page)
    assert "Tab B." in text(version) and "description: Mine" in text(version)
    assert f'<tr id="version-{latest.pk}" class="current">' in history.content.decode()


def test_an_edit_not_kept_that_holds_a_secret_is_kept_nowhere(client, stores, alice):
    """A team store's history is every member's: the conflict page's promise to keep the
    other edit does not stretch to a secret that saving it would have refused."""
    team = stores.team
    target = root(team) / "project_release.md"
    theirs = target.read_text() + "Tab A's line.\n"
    token = fake_tokens(7)["github-pat"]
    mine = {"name": "Release", "description": "Mine", "type": "project", "body": f"{token}\n"}
    conflict = save_after(
        client, alice, team, "project_release.md", lambda: target.write_text(theirs), mine
    )
    versions = len(list(timeline(team, "project_release.md")))
    kept = client.post(
        url("memory_edit", team, "project_release.md"),
        {**mine, "base_sha256": base_sha256(conflict), "keep_disk": "1"},
        follow=True,
    )
    assert target.read_text() == theirs
    assert "Your edit was not kept anywhere, as saving it would have been refused" in text(kept)
    assert token not in kept.content.decode()
    assert len(list(timeline(team, "project_release.md"))) == versions
    assert not any(token in (v.note or "") for v in timeline(team, "project_release.md"))


def test_a_conflict_page_is_not_a_licence_to_overwrite_a_second_change(client, stores, alice):
    target = root(stores.private) / "feedback_tests.md"
    client.force_login(alice)
    form = client.get(url("memory_edit", stores.private, "feedback_tests.md"))
    target.write_text(target.read_text() + "First change.\n")
    mine = {"name": "Real DB", "description": "Mine", "type": "user", "body": "Mine.\n"}
    conflict = client.post(
        url("memory_edit", stores.private, "feedback_tests.md"),
        {**mine, "base_sha256": base_sha256(form)},
    )
    target.write_text(target.read_text() + "Second change.\n")
    again = client.post(
        url("memory_edit", stores.private, "feedback_tests.md"),
        {**mine, "base_sha256": base_sha256(conflict), "save_anyway": "1"},
    )
    assert again.status_code == 409
    assert target.read_text().endswith("First change.\nSecond change.\n")


def test_a_file_whose_header_is_not_closed_is_not_given_a_second_one(client, stores, alice):
    target = root(stores.private) / "user_long.md"
    original = "---\nname: Long\n" + "".join(f"k{n}: v\n" for n in range(40)) + "---\nBody.\n"
    target.write_text(original)
    rescan_store(stores.private)
    client.force_login(alice)
    form = client.get(url("memory_edit", stores.private, "user_long.md"))
    assert f">\n{original}</textarea>" in form.content.decode()  # the whole file is the body
    response = edit(
        client,
        stores.private,
        "user_long.md",
        name="Long",
        description="A long header",
        type="user",
        body=original,
    )
    assert response.status_code == 200
    assert (
        "user_long.md: header not closed within the first 30 lines; fix the file by hand rather "
        "than adding a second header"
    ) in text(response)
    assert target.read_text() == original


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("name: Tabs\n\tdescription: indented with a tab\n", "found a tab character"),
        ("- name: Listed\n- description: a list\n", "frontmatter is not a mapping (it is a list)"),
    ],
)
def test_a_header_that_cannot_be_read_is_shown_before_saving_replaces_it(
    client, stores, alice, header, problem
):
    target = root(stores.private) / "user_odd.md"
    target.write_text(f"---\n{header}---\nBody.\n")
    rescan_store(stores.private)
    client.force_login(alice)
    form = client.get(url("memory_edit", stores.private, "user_odd.md"))
    page = text(form)
    assert "This file's header could not be read: " in page and problem in page
    assert "Saving replaces it with a header written from the fields below" in page
    raw = re.search(r'<pre id="raw-header">(.*?)</pre>', form.content.decode(), re.S)
    assert raw and unescape(raw.group(1)) == f"---\n{header}---"


def test_the_form_rejects_a_multi_line_description_and_an_unknown_type(client, stores, alice):
    target = root(stores.private) / "user_role.md"
    before = target.read_bytes()
    client.force_login(alice)
    response = edit(
        client, stores.private, "user_role.md", name="Role", description="one\ntwo", type="boss"
    )
    assert response.status_code == 200
    page = text(response)
    assert "Keep this to one line: recall reads it as a one-line hook." in page
    assert "Select a valid choice. boss is not one of the available choices." in page
    assert target.read_bytes() == before


def test_live_warnings_come_back_as_a_fragment(client, stores, alice):
    client.force_login(alice)
    response = client.post(
        url("memory_lint", stores.private),
        {"type": "feedback", "body": "**Why:** x", "description": "d"},
    )
    html = response.content.decode()
    assert html.startswith('<div id="warnings" class="warnings">')
    assert text(response) == (
        "Missing **How to apply:** — feedback memories should say when and where it applies."
    )
    quiet = client.post(url("memory_lint", stores.private), {"type": "user", "description": "d"})
    assert text(quiet) == ""


def form_fields(response) -> dict[str, str]:
    """What a browser submits from the edit form as it was served (inputs, the selected type,
    the body), so a test changes only what a person would type."""
    html = response.content.decode()
    fields = {
        name: unescape(value)
        for name, value in re.findall(
            r'<input type="(?:text|hidden)" name="(\w+)" value="([^"]*)"', html
        )
    }
    fields["save_anyway"] = "1"  # past the warnings, which other tests cover
    fields["type"] = re.search(r'<option value="(\w*)" selected>', html).group(1)
    fields["body"] = unescape(
        re.search(r'name="body"[^>]*>\n(.*?)</textarea>', html, re.S).group(1)
    )
    return fields


CURATED = "- [Real DB](feedback_tests.md)  —  curated: *never* mock the DB (see #412)"


def test_the_edit_form_shows_the_memory_s_index_line_as_it_is(client, stores, alice):
    index = root(stores.private) / "MEMORY.md"
    index.write_bytes(INDEX.replace("- [Real DB](feedback_tests.md) — no mocks", CURATED).encode())
    client.force_login(alice)
    fields = form_fields(client.get(url("memory_edit", stores.private, "feedback_tests.md")))
    assert fields["index_line"] == CURATED


def test_an_edit_that_does_not_touch_the_index_line_leaves_memory_md_byte_for_byte(
    client, stores, alice
):
    index = root(stores.private) / "MEMORY.md"
    crlf = INDEX.replace("- [Real DB](feedback_tests.md) — no mocks", CURATED).replace("\n", "\r\n")
    index.write_bytes(crlf.rstrip("\r\n").encode())  # CRLF line ends, no final newline
    rescan_store(stores.private)
    client.force_login(alice)
    fields = form_fields(client.get(url("memory_edit", stores.private, "feedback_tests.md")))
    fields.update(
        body="Use the real database.\n\n**Why:** mocks hid a bug.\n**How to apply:** always.\n"
    )
    fields.update(description="Integration tests hit a real database")
    response = client.post(url("memory_edit", stores.private, "feedback_tests.md"), fields)
    assert response.status_code == 302
    assert index.read_bytes() == crlf.rstrip("\r\n").encode()
    assert "Integration tests" in (root(stores.private) / "feedback_tests.md").read_text()
    # Its versions: first seen, then the CRLF one found on disk; the edit made none.
    assert [v.via for v in stores.private.versions.filter(path="MEMORY.md")] == ["disk", "disk"]


def test_an_index_line_edited_on_the_form_is_written_and_kept_in_the_history(client, stores, alice):
    index = root(stores.private) / "MEMORY.md"
    client.force_login(alice)
    fields = form_fields(client.get(url("memory_edit", stores.private, "feedback_tests.md")))
    fields.update(index_line=CURATED)
    response = client.post(url("memory_edit", stores.private, "feedback_tests.md"), fields)
    assert response.status_code == 302
    assert index.read_text() == INDEX.replace("- [Real DB](feedback_tests.md) — no mocks", CURATED)
    latest = stores.private.versions.filter(path="MEMORY.md").first()
    assert (latest.user, latest.via, latest.note) == (alice, "ui", "the line of feedback_tests.md")


def test_an_index_line_that_is_not_this_memory_s_is_refused_and_nothing_written(
    client, stores, alice
):
    target = root(stores.private) / "feedback_tests.md"
    before = target.read_bytes()
    client.force_login(alice)
    fields = form_fields(client.get(url("memory_edit", stores.private, "feedback_tests.md")))
    fields.update(index_line="- [Role](user_role.md) — who Alice is", body="Changed.\n")
    response = client.post(url("memory_edit", stores.private, "feedback_tests.md"), fields)
    assert response.status_code == 200
    assert (
        "Nothing was saved: the index line must be one list item linking to feedback_tests.md"
        in text(response)
    )
    assert target.read_bytes() == before
    assert (root(stores.private) / "MEMORY.md").read_text() == INDEX
    fields.update(index_line="two\nlines")
    response = client.post(url("memory_edit", stores.private, "feedback_tests.md"), fields)
    assert "Keep this to one line" in text(response)
    assert target.read_bytes() == before


def test_an_unknown_type_is_shown_with_a_warning_and_kept_on_save(client, stores, alice):
    target = root(stores.private) / "decision_db.md"
    target.write_text("---\nname: DB\ndescription: We chose Postgres\ntype: decision\n---\nB.\n")
    rescan_store(stores.private)
    client.force_login(alice)
    form = client.get(url("memory_edit", stores.private, "decision_db.md"))
    html = form.content.decode()
    assert '<option value="" selected>decision (unknown type, kept)</option>' in html
    assert 'Type "decision" is not one memhub knows' in text(form)
    assert 'Type "decision" is not one memhub knows' in text(
        client.get(url("memory", stores.private, "decision_db.md"))
    )
    response = edit(
        client, stores.private, "decision_db.md", name="DB", description="We use Postgres",
        type="", body="B.\n",
    )  # fmt: skip
    assert response.status_code == 302
    assert target.read_text() == (
        "---\nname: DB\ndescription: We use Postgres\ntype: decision\n---\nB.\n"
    )
    edit(
        client, stores.private, "decision_db.md", name="DB", description="We use Postgres",
        type="project", body="B.\n\n**Why:** x\n**How to apply:** y\n",
    )  # fmt: skip
    assert "type: project\n" in target.read_text()  # picking a type replaces it


def test_an_over_long_description_is_warned_before_saving(client, stores, alice):
    client.force_login(alice)
    description = "Tests hit a real database: " + "x" * 300
    response = edit(
        client, stores.private, "feedback_tests.md", name="Real DB", description=description,
        type="feedback", body="B.\n\n**Why:** x\n**How to apply:** y\n",
    )  # fmt: skip
    assert response.status_code == 200
    assert f"Description is {len(description)} characters: keep it to one line under ~200" in (
        text(response)
    )
    assert "Save anyway" in text(response)
    assert "x" * 300 not in (root(stores.private) / "feedback_tests.md").read_text()


def test_an_edit_of_a_crlf_file_keeps_its_line_endings(client, stores, alice):
    """A browser sends the textarea back with its own line breaks: a CRLF file whose
    description alone was edited keeps its body byte for byte."""
    target = root(stores.private) / "feedback_windows.md"
    body = "Line one.\r\nLine two.\r\n"
    target.write_bytes(
        b"---\nname: Windows\ndescription: Made on Windows\ntype: feedback\n---\n" + body.encode()
    )
    rescan_store(stores.private)
    client.force_login(alice)
    fields = {"name": "Windows", "description": "Edited", "type": "feedback", "body": body}
    form = client.get(url("memory_edit", stores.private, "feedback_windows.md"))
    client.post(
        url("memory_edit", stores.private, "feedback_windows.md"),
        {**fields, "base_sha256": base_sha256(form), "save_anyway": "1"},
    )
    written = target.read_bytes()
    assert b"description: Edited\n" in written
    assert written.endswith(b"---\n" + body.encode())
