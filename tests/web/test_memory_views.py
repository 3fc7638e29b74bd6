"""One memory: who may see it, what the page shows, editing it (warnings, conflicts, the file
and its index line on disk), creating one and forgetting one. The test client submits forms as a
browser without JavaScript does."""

from __future__ import annotations

import hashlib
import os
import re
import time
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.urls import reverse

from memapp.stores.discovery import discover_local_stores
from memapp.stores.mirror import rescan_store
from memapp.stores.models import MemoryFile, Store
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

DAY = 86_400
STALENESS = (
    "This memory is 10 days old. Memories are point-in-time observations, not live state: "
    "claims about code behavior or file:line citations may be outdated. Verify against the "
    "current code before asserting them as fact."
)
INDEX = (
    "# Alice's memory\n"
    "- [Role](user_role.md) — who Alice is\n"
    "- [Real DB](feedback_tests.md) — no mocks\n"
    "\n"
    "Notes kept by hand stay as they are.  \n"
)


@pytest.fixture
def stores(memory_base, alice) -> SimpleNamespace:
    """Alice's discovered stores; the private index has a heading and a hand-written note."""
    private = memory_base / "projects" / "-home-alice-app" / "memory"
    (private / "MEMORY.md").write_text(INDEX)
    discover_local_stores(memory_base)
    return SimpleNamespace(**{store.kind: store for store in Store.objects.all()})


def root(store: Store) -> Path:
    return Path(store.path)


def text(response) -> str:
    """The page as a person reads it: tags dropped, entities decoded, whitespace collapsed."""
    html = re.sub(r"</?(?:a|code|span|strong|em)\b[^>]*>", "", response.content.decode())
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def pre(response, selector: str) -> str:
    match = re.search(rf"<pre {selector}>(.*?)</pre>", response.content.decode(), re.S)
    assert match, f"no <pre {selector}> on the page"
    return unescape(match.group(1))


def base_sha256(response) -> str:
    match = re.search(r'name="base_sha256" value="([0-9a-f]{64})"', response.content.decode())
    assert match, "no base_sha256 in the form"
    return match.group(1)


def url(name: str, store: Store, path: str | None = None) -> str:
    kwargs = {"store_id": store.pk} | ({"path": path} if path else {})
    return reverse(name, kwargs=kwargs)


def set_age(path: Path, days: float) -> None:
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))


def files_on_disk(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- who may see what -------------------------------------------------------------------------


def memory_requests(store: Store, path: str) -> list[tuple[str, str, dict]]:
    edit = {"name": "Changed", "description": "Changed by someone else", "type": "user"}
    return [
        ("get", url("memory", store, path), {}),
        ("get", url("memory_edit", store, path), {}),
        ("post", url("memory_edit", store, path), edit),
        ("get", url("memory_forget", store, path), {}),
        ("post", url("memory_forget", store, path), {}),
    ]


def test_the_owner_reaches_every_page_of_her_private_memory(client, stores, alice):
    client.force_login(alice)
    for method, address, _ in memory_requests(stores.private, "user_role.md"):
        if method == "get":
            assert client.get(address).status_code == 200, address


@pytest.mark.parametrize("username", ["bob", "charlie", "sam"])
def test_a_private_memory_is_a_404_for_teammate_outsider_and_staff(
    client, stores, memory_base, bob, charlie, sam, username
):
    stores.private.project.members.add(bob)
    before = files_on_disk(memory_base)
    client.force_login({"bob": bob, "charlie": charlie, "sam": sam}[username])
    for store, path in ((stores.private, "user_role.md"), (stores.agent, "reference_style.md")):
        for method, address, data in memory_requests(store, path):
            assert getattr(client, method)(address, data).status_code == 404, (username, address)
    assert files_on_disk(memory_base) == before
    assert MemoryFile.objects.count() == 4


def test_a_team_memory_is_open_to_project_members_only(client, stores, bob, charlie, sam):
    team = stores.team
    stores.team.project.members.add(bob)
    client.force_login(bob)
    page = client.get(url("memory", team, "project_release.md"))
    assert page.status_code == 200
    assert "Release freeze 2026-03-05" in text(page)
    assert client.get(url("memory_edit", team, "project_release.md")).status_code == 200
    for user in (charlie, sam):
        client.force_login(user)
        for method, address, data in memory_requests(team, "project_release.md"):
            assert getattr(client, method)(address, data).status_code == 404, (user, address)
    assert (root(team) / "project_release.md").exists()


def test_a_memory_outside_the_store_is_a_404(client, stores, alice):
    client.force_login(alice)
    # The team memory is not part of the private store, though it lies in its directory.
    assert client.get(url("memory", stores.private, "team/project_release.md")).status_code == 404
    assert client.get(url("memory", stores.private, "../x.md")).status_code == 404


# --- the memory page ----------------------------------------------------------------------------


def test_the_memory_page_shows_its_frontmatter_fields(client, stores, alice):
    client.force_login(alice)
    page = text(client.get(url("memory", stores.private, "feedback_tests.md")))
    size = (root(stores.private) / "feedback_tests.md").stat().st_size
    assert (
        "Name Real DB Description Tests hit a real database Type feedback "
        f"File feedback_tests.md · {size} bytes · saved today"
    ) in page
    assert "Not listed in MEMORY.md" not in page
    # Feedback without **Why:** / **How to apply:** is flagged on the page too.
    assert "Missing **Why:** — feedback memories should say why (an incident, a preference)." in (
        page
    )


def test_a_memory_with_its_type_under_metadata_says_so(client, stores, alice):
    (root(stores.private) / "real-db.md").write_text(
        "---\nname: real-db\ndescription: Tests hit a real database\n"
        "metadata:\n  type: feedback\n---\nSee [[user_role]].\n"
    )
    rescan_store(stores.private)
    client.force_login(alice)
    page = text(client.get(url("memory", stores.private, "real-db.md")))
    assert "Type feedback (under metadata:)" in page
    assert "Index Not listed in MEMORY.md" in page


def test_html_in_a_body_is_shown_as_text(client, stores, alice):
    write_memory(
        root(stores.private),
        "reference_xss.md",
        "XSS",
        "Markup in a body",
        "reference",
        '<script>alert("memory")</script>\n\n<img src=x onerror=alert(1)>\n\n'
        "[click](javascript:alert(2)) and **bold**\n",
    )
    rescan_store(stores.private)
    client.force_login(alice)
    html = client.get(url("memory", stores.private, "reference_xss.md")).content.decode()
    markdown = re.search(r'<div class="markdown">(.*?)</div>', html, re.S).group(1)
    assert '&lt;script&gt;alert("memory")&lt;/script&gt;' in markdown
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown
    assert "<script" not in markdown and "<img" not in markdown
    assert "javascript:" not in markdown.replace("[click](javascript:", "")
    assert "<strong>bold</strong>" in markdown


def test_an_old_memory_carries_the_staleness_note_an_agent_sees(client, stores, alice):
    set_age(root(stores.private) / "feedback_tests.md", 10.2)
    rescan_store(stores.private)
    client.force_login(alice)
    response = client.get(url("memory", stores.private, "feedback_tests.md"))
    # The note comes first, then the header, as an agent reads them; the note is shown once.
    assert pre(response, 'class="agent-header"') == "Memory: feedback_tests.md:"
    assert text(response).count(STALENESS) == 1
    assert f"What an agent sees {STALENESS} Memory: feedback_tests.md:" in text(response)
    assert "saved 10 days ago" in text(response)


def test_a_new_memory_is_saved_today_and_has_no_staleness_note(client, stores, alice):
    client.force_login(alice)
    response = client.get(url("memory", stores.private, "user_role.md"))
    assert pre(response, 'class="agent-header"') == "Memory (saved today): user_role.md:"
    assert "days old" not in text(response)
    set_age(root(stores.private) / "user_role.md", 1.5)
    rescan_store(stores.private)
    response = client.get(url("memory", stores.private, "user_role.md"))
    assert pre(response, 'class="agent-header"') == "Memory (saved yesterday): user_role.md:"


def test_wiki_links_resolve_to_memories_and_mark_names_not_written_yet(client, stores, alice):
    write_memory(
        root(stores.private),
        "reference_links.md",
        "Links",
        "Links to other memories",
        "reference",
        "By name [[Real DB]], by file [[user_role]], unwritten [[deploy-checklist]], "
        "in code `[[code-span]]`.\n",
    )
    rescan_store(stores.private)
    client.force_login(alice)
    response = client.get(url("memory", stores.private, "reference_links.md"))
    html = response.content.decode()
    real_db = url("memory", stores.private, "feedback_tests.md")
    role = url("memory", stores.private, "user_role.md")
    assert f'<a class="wikilink" href="{real_db}" rel="noopener noreferrer nofollow">' in html
    assert f'<a class="wikilink" href="{role}"' in html
    assert (
        '<span class="wikilink missing" title="No memory named deploy-checklist yet">'
        "deploy-checklist</span>"
    ) in html
    assert "<code>[[code-span]]</code>" in html
    page = text(response)
    assert "Links Real DB user_role deploy-checklist — no memory with this name yet" in page


def test_backlinks_list_the_memories_that_link_here(client, stores, alice):
    directory = root(stores.private)
    write_memory(directory, "reference_a.md", "A", "Links by name", "reference", "[[Real DB]]\n")
    write_memory(
        directory, "reference_b.md", "B", "Links by file", "reference", "[[feedback_tests]]\n"
    )
    write_memory(directory, "reference_c.md", "C", "Links elsewhere", "reference", "[[Role]]\n")
    rescan_store(stores.private)
    client.force_login(alice)
    page = text(client.get(url("memory", stores.private, "feedback_tests.md")))
    backlinks = page.split("Backlinks", 1)[1]
    assert sorted(backlinks.split()) == ["A", "B"]
    role = text(client.get(url("memory", stores.private, "user_role.md")))
    assert role.split("Backlinks", 1)[1].split() == ["C"]
    lonely = text(client.get(url("memory", stores.private, "reference_a.md")))
    assert lonely.endswith("Backlinks No memory links here.")


def test_the_memory_page_costs_a_few_queries_however_many_memories_the_store_holds(
    client, stores, alice, django_assert_max_num_queries
):
    directory = root(stores.private)
    for i in range(60):
        write_memory(directory, f"reference_{i}.md", f"R{i}", "Filler", "reference", "[[Role]]\n")
    rescan_store(stores.private)
    client.force_login(alice)
    with django_assert_max_num_queries(12):
        page = text(client.get(url("memory", stores.private, "user_role.md")))
    assert len(page.split("Backlinks", 1)[1].split()) == 60


def test_a_memory_with_broken_frontmatter_shows_the_problem(client, stores, alice):
    (root(stores.private) / "broken.md").write_text("---\njust a sentence\n---\nBody.\n")
    rescan_store(stores.private)
    client.force_login(alice)
    page = text(client.get(url("memory", stores.private, "broken.md")))
    assert "Frontmatter problem: frontmatter is not a mapping (it is a string)" in page
    assert "Name — Description — Type untyped" in page


# --- edit ---------------------------------------------------------------------------------------


def edit(client, store: Store, path: str, **fields):
    form = client.get(url("memory_edit", store, path))
    data = {"base_sha256": base_sha256(form), **fields}
    return client.post(url("memory_edit", store, path), data)


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
    assert row.sha256 == sha256(target)
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
    client.force_login(alice)
    form = client.get(url("memory_edit", stores.private, "feedback_tests.md"))
    theirs = (
        "---\nname: Real DB\ndescription: Tests hit a real database\ntype: feedback\n---\n"
        "An agent added this line.\n"
    )
    target.write_text(theirs)
    mine = {
        "name": "Real DB",
        "description": "Tests hit a real database (edited)",
        "type": "feedback",
        "body": "My edit.\n\n**Why:** x.\n**How to apply:** y.\n",
        "base_sha256": base_sha256(form),
    }
    response = client.post(url("memory_edit", stores.private, "feedback_tests.md"), mine)
    assert response.status_code == 409
    assert target.read_text() == theirs
    assert pre(response, 'class="version" id="mine"') == mine["body"]
    assert pre(response, 'class="version" id="theirs"') == theirs
    page = text(response)
    assert "Nothing was overwritten." in page
    assert "Description Tests hit a real database (edited)" in page
    html = response.content.decode()
    keep_disk = url("memory", stores.private, "feedback_tests.md")
    assert f'<a class="button secondary" href="{keep_disk}">Keep the version on disk</a>' in html
    assert (root(stores.private) / "MEMORY.md").read_text() == INDEX

    # "Keep mine" submits the conflict page's form, which is based on the version on disk now.
    assert base_sha256(response) == sha256(target)
    resolved = client.post(
        url("memory_edit", stores.private, "feedback_tests.md"),
        {**mine, "base_sha256": base_sha256(response), "save_anyway": "1"},
    )
    assert resolved.status_code == 302
    assert target.read_text().endswith(f"---\n{mine['body']}")
    assert "description: Tests hit a real database (edited)\n" in target.read_text()


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


# --- create -----------------------------------------------------------------------------------


def create(client, store: Store, **fields):
    return client.post(url("memory_create", store), fields)


def test_creating_a_memory_writes_a_file_in_the_directorys_style(client, stores, alice):
    directory = root(stores.private)
    client.force_login(alice)
    body = "Run ruff.\n\n**Why:** CI fails otherwise.\n**How to apply:** before pushing.\n"
    response = create(
        client,
        stores.private,
        name="Lint before push",
        description="Run ruff before pushing",
        type="feedback",
        body=body,
    )
    assert response.status_code == 302
    assert response["Location"] == url("memory", stores.private, "feedback_lint_before_push.md")
    assert (directory / "feedback_lint_before_push.md").read_text() == (
        "---\nname: Lint before push\ndescription: Run ruff before pushing\n"
        f"type: feedback\n---\n{body}"
    )
    assert (directory / "MEMORY.md").read_text() == INDEX + (
        "- [Lint before push](feedback_lint_before_push.md) — Run ruff before pushing\n"
    )
    row = stores.private.files.get(path="feedback_lint_before_push.md")
    assert (row.name, row.type, row.in_index) == ("Lint before push", "feedback", True)
    assert "Saved feedback_lint_before_push.md." in text(client.get(response["Location"]))


def test_a_second_memory_with_the_same_name_gets_its_own_file(client, stores, alice):
    client.force_login(alice)
    fields = {"name": "Role", "description": "Another role", "type": "user", "body": "x\n"}
    assert create(client, stores.private, **fields)["Location"].endswith("/m/user_role-2.md")
    assert (
        (root(stores.private) / "user_role.md")
        .read_text()
        .startswith("---\nname: Role\ndescription: Alice is a backend engineer\n")
    )


def test_creating_in_a_directory_of_a_newer_client_uses_its_form(client, stores, alice):
    directory = root(stores.agent)
    for slug in ("style-guide", "review-tone"):
        (directory / f"{slug}.md").write_text(
            f"---\nname: {slug}\ndescription: d\nmetadata:\n  type: reference\n---\nx\n"
        )
    rescan_store(stores.agent)
    client.force_login(alice)
    response = create(
        client,
        stores.agent,
        name="Flaky Tests Policy",
        description="Quarantine flaky tests",
        type="reference",
        body="Tag them.\n",
    )
    assert response["Location"] == url("memory", stores.agent, "flaky-tests-policy.md")
    assert (directory / "flaky-tests-policy.md").read_text() == (
        "---\nname: Flaky Tests Policy\ndescription: Quarantine flaky tests\n"
        "metadata:\n  type: reference\n---\nTag them.\n"
    )
    # The agent store had no index: one is started with the new line.
    assert (directory / "MEMORY.md").read_text() == (
        "- [Flaky Tests Policy](flaky-tests-policy.md) — Quarantine flaky tests\n"
    )


def test_creating_a_project_memory_with_warnings_needs_save_anyway(client, stores, alice):
    directory = root(stores.team)
    client.force_login(alice)
    fields = {
        "name": "Demo",
        "description": "Demo for the customer",
        "type": "project",
        "body": "Demo is tomorrow.\n",
    }
    first = create(client, stores.team, **fields)
    assert first.status_code == 200
    assert 'Relative date "tomorrow"' in text(first)
    assert not (directory / "project_demo.md").exists()
    second = create(client, stores.team, **fields, save_anyway="1")
    assert second.status_code == 302
    assert (directory / "project_demo.md").read_text().endswith("---\nDemo is tomorrow.\n")


def test_the_new_memory_form_can_start_with_a_type(client, stores, alice):
    client.force_login(alice)
    html = client.get(url("memory_create", stores.private) + "?type=project").content.decode()
    assert '<option value="project" selected>project</option>' in html
    assert 'name="base_sha256"' in html


# --- forget -------------------------------------------------------------------------------------


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
