"""The store pages: who may see a store, its index as an agent receives it, the memory list with
its filters, sorts, search and pages, the health page and the rescan button."""

from __future__ import annotations

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
from memapp.stores.models import Store
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

DAY = 86_400
TRUNCATION_WARNING = (
    "> WARNING: MEMORY.md is 250 lines (limit: 200). Only part of it was loaded. Keep index "
    "entries to one line under ~200 chars; move detail into topic files."
)


@pytest.fixture
def stores(memory_base, alice) -> SimpleNamespace:
    """Alice's discovered stores: private (2 memories), team (1) and agent (1)."""
    discover_local_stores(memory_base)
    found = {store.kind: store for store in Store.objects.all()}
    return SimpleNamespace(**found)


def root(store: Store) -> Path:
    return Path(store.path)


def text(response) -> str:
    """The page as a person reads it: tags dropped, entities decoded, whitespace collapsed."""
    html = re.sub(r"</?(?:a|code|span|strong|em)\b[^>]*>", "", response.content.decode())
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def titles(response) -> list[str]:
    """The memory titles listed on a store or search page, in order."""
    found = re.findall(r'<a class="title" href="[^"]*">(.*?)</a>', response.content.decode())
    return [unescape(re.sub(r"<[^>]+>", "", title)) for title in found]


def pre(response, css_class: str) -> str:
    page = response.content.decode()
    match = re.search(rf'<pre class="{css_class}"[^>]*>(.*?)</pre>', page, re.S)
    assert match, f"no <pre class={css_class!r}> on the page"
    return unescape(match.group(1))


def meter(response, meter_id: str) -> tuple[str, str]:
    """(css classes, "value") of the line or byte meter."""
    match = re.search(
        rf'<div class="meter ?([^"]*)" id="{meter_id}">.*?<span class="value">([^<]*)</span>',
        response.content.decode(),
        re.S,
    )
    assert match, f"no meter {meter_id!r}"
    return match.group(1).strip(), match.group(2)


def set_age(path: Path, days: float) -> None:
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))


def files_on_disk(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def store_url(store: Store, name: str = "store") -> str:
    return reverse(name, kwargs={"store_id": store.pk})


# --- who may see what -------------------------------------------------------------------------


def store_requests(store: Store) -> list[tuple[str, str, dict]]:
    return [
        ("get", store_url(store), {}),
        ("get", store_url(store) + "?q=Role", {}),
        ("get", store_url(store, "store_health"), {}),
        ("post", store_url(store, "store_rescan"), {}),
        ("post", store_url(store, "rebuild_index"), {}),
        ("get", store_url(store, "memory_create"), {}),
        (
            "post",
            store_url(store, "memory_create"),
            {"name": "Sneaky", "description": "Planted by someone else", "type": "user"},
        ),
        ("post", store_url(store, "memory_lint"), {"type": "project", "body": "next Tuesday"}),
    ]


def test_a_store_page_needs_a_login(client, stores):
    response = client.get(store_url(stores.private))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_the_owner_reaches_every_page_of_her_private_store(client, stores, alice):
    client.force_login(alice)
    for method, url, data in store_requests(stores.private):
        response = getattr(client, method)(url, data)
        expected = 302 if method == "post" and not url.endswith("/lint/") else 200
        assert response.status_code == expected, url


@pytest.mark.parametrize("username", ["bob", "charlie", "sam"])
def test_a_private_store_is_a_404_for_teammate_outsider_and_staff(
    client, stores, memory_base, bob, charlie, sam, username
):
    stores.private.project.members.add(bob)
    before = files_on_disk(memory_base)
    client.force_login({"bob": bob, "charlie": charlie, "sam": sam}[username])
    for store in (stores.private, stores.agent):
        for method, url, data in store_requests(store):
            assert getattr(client, method)(url, data).status_code == 404, (username, url)
    assert files_on_disk(memory_base) == before


def test_a_team_store_is_open_to_project_members_only(client, stores, bob, charlie, sam):
    team = stores.team
    client.force_login(bob)
    assert client.get(store_url(team)).status_code == 404
    team.project.members.add(bob)
    response = client.get(store_url(team))
    assert response.status_code == 200
    assert titles(response) == ["Release"]
    assert client.get(store_url(team, "store_health")).status_code == 200
    for user in (charlie, sam):
        client.force_login(user)
        for method, url, data in store_requests(team):
            assert getattr(client, method)(url, data).status_code == 404, (user, url)


def test_search_lists_only_the_memories_a_user_may_see(client, stores, bob, charlie, sam):
    stores.private.project.members.add(bob)
    expected = {
        "alice": ["Real DB", "Release", "Role", "Style"],
        "bob": ["Release"],
        "charlie": [],
        "sam": [],
    }
    users = {"alice": stores.private.owner, "bob": bob, "charlie": charlie, "sam": sam}
    for username, names in expected.items():
        client.force_login(users[username])
        response = client.get("/search/?sort=name")
        assert titles(response) == names, username
        # A word only a private memory holds finds nothing for anyone but its owner.
        found = titles(client.get("/search/?q=backend engineer"))
        assert found == (["Role"] if username == "alice" else []), username


def test_home_counts_leave_out_private_stores_even_for_staff(client, stores, bob, sam):
    set_age(root(stores.private) / "user_role.md", 90)
    rescan_store(stores.private)
    stores.private.project.members.add(bob)
    seen = {
        stores.private.owner: "3 stores, 4 memories, 1 stale (older than 30 days).",
        bob: "1 store, 1 memory.",
        sam: "0 stores, 0 memories.",
    }
    for user, summary in seen.items():
        client.force_login(user)
        page = text(client.get("/"))
        assert summary in page, user.username
        assert ("Role" in page) is (user == stores.private.owner), user.username


# --- the index as an agent receives it -------------------------------------------------------


def test_the_index_is_shown_exactly_as_an_agent_receives_it(client, stores, alice):
    client.force_login(alice)
    response = client.get(store_url(stores.private))
    index = "- [Role](user_role.md) — who Alice is\n- [Real DB](feedback_tests.md) — no mocks"
    assert pre(response, "index") == index
    assert meter(response, "line-meter") == ("", "2 / 200")
    assert meter(response, "byte-meter") == ("", f"{len(index.encode())} / 25000")
    assert "Truncated" not in text(response)


def test_an_index_over_200_lines_is_cut_with_the_agents_warning(client, stores, alice):
    lines = [f"- [Memory {n}](memory_{n}.md) — hook {n}" for n in range(1, 251)]
    (root(stores.private) / "MEMORY.md").write_text("\n".join(lines) + "\n")
    client.force_login(alice)
    response = client.get(store_url(stores.private))
    shown = pre(response, "index")
    assert shown == "\n".join(lines[:200]) + "\n\n" + TRUNCATION_WARNING
    assert "memory_201.md" not in shown
    assert meter(response, "line-meter") == ("over", "250 / 200")
    assert meter(response, "byte-meter")[0] == ""
    assert (
        f"Truncated: agents see only part of this index, ending with this warning: "
        f"{TRUNCATION_WARNING}"
    ) in text(response)


def test_an_index_over_25000_bytes_is_cut_at_a_line_end(client, stores, alice):
    detail = " ".join(["detail"] * 25)
    lines = [f"- [Memory {n}](memory_{n}.md) — {detail}" for n in range(1, 151)]
    index = "\n".join(lines)
    (root(stores.private) / "MEMORY.md").write_text(index)
    size = len(index.encode())
    assert size > 25_000
    client.force_login(alice)
    response = client.get(store_url(stores.private))
    shown = pre(response, "index")
    kept, warning = shown.split("\n\n> ")
    assert index.startswith(kept + "\n")
    assert len(kept.encode()) <= 25_000
    assert warning == (
        f"WARNING: MEMORY.md is {size / 1024:.1f}KB (limit: 24.4KB) — index entries are too "
        "long. Only part of it was loaded. Keep index entries to one line under ~200 chars; "
        "move detail into topic files."
    )
    assert meter(response, "line-meter") == ("", "150 / 200")
    assert meter(response, "byte-meter") == ("over", f"{size} / 25000")


def test_a_store_without_an_index_says_so(client, stores, alice):
    client.force_login(alice)
    response = client.get(store_url(stores.agent))
    assert "No MEMORY.md yet (or it is empty)." in text(response)
    assert meter(response, "line-meter") == ("", "0 / 200")


def test_a_team_index_page_says_what_keeps_lines_or_the_index_from_agents(client, stores, alice):
    """The team store's page shows its MEMORY.md, and says when agents get it otherwise
    (docs/design.md §10): without the line of a file team sync keeps back, or not at all while
    a line of a file the team repository lacks holds a secret, naming that line."""
    from teamsync.models import BlockedFile

    client.force_login(alice)
    index = root(stores.team) / "MEMORY.md"
    assert "keeps back" not in text(client.get(store_url(stores.team)))
    index.write_text(index.read_text() + "- [CI](reference_ci.md) — the runner's setup\n")
    BlockedFile.objects.create(store=stores.team, key="reference_ci.md", reason="secret", hits=[])
    page = text(client.get(store_url(stores.team)))
    assert "Agents get this index without the entries of files team sync keeps back" in page
    assert "No agent gets this index" not in page

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    index.write_text(index.read_text() + f"- [Runner](runner.md) — its token is {token}\n")
    page = text(client.get(store_url(stores.team)))
    assert "No agent gets this index, not even teammates' agents" in page
    assert "line 3: GitHub personal access token (github-pat)" in page
    assert "without the entries of files" not in page  # the stronger notice only
    # The private store's index goes to its owner's agents as it is: no notice.
    assert "agents get" not in text(client.get(store_url(stores.private))).lower()


# --- the memory list: filters, sorts, search, pages ------------------------------------------


@pytest.fixture
def varied(stores):
    """The private store with one memory per problem the filters look for."""
    directory = root(stores.private)
    write_memory(
        directory,
        "project_ship.md",
        "Ship",
        "Shipping plan",
        "project",
        "We ship next Tuesday.\n\n**Why:** customers.\n**How to apply:** plan.\n",
    )
    write_memory(
        directory,
        "reference_wiki.md",
        "Wiki",
        "Where the wiki is",
        "reference",
        "See [[nowhere-yet]] and [[Role]].\n",
    )
    write_memory(
        directory,
        "feedback_done.md",
        "Reviews",
        "Small pull requests",
        "feedback",
        "Keep PRs small.\n\n**Why:** review time.\n**How to apply:** split work.\n",
    )
    (directory / "broken.md").write_text("---\njust a sentence\n---\nBody.\n")
    (directory / "MEMORY.md").write_text(
        "- [Role](user_role.md) — who Alice is\n"
        "- [Real DB](feedback_tests.md) — no mocks\n"
        "- [Ship](project_ship.md) — plan\n"
        "- [Wiki](reference_wiki.md) — wiki\n"
        "- [Reviews](feedback_done.md) — small PRs\n"
    )
    ages = {
        "user_role.md": 0,
        "feedback_tests.md": 1.5,
        "project_ship.md": 3,
        "reference_wiki.md": 12,
        "feedback_done.md": 45,
        "broken.md": 100,
    }
    for name, days in ages.items():
        set_age(directory / name, days)
    rescan_store(stores.private)
    return stores.private


def listed(client, store: Store, query: str = "") -> list[str]:
    return titles(client.get(store_url(store) + query))


def test_the_list_is_newest_first_by_default(client, varied, alice):
    client.force_login(alice)
    assert listed(client, varied) == ["Role", "Real DB", "Ship", "Wiki", "Reviews", "broken"]
    response = client.get(store_url(varied))
    assert "6 memories" in text(response)


def test_the_list_sorts_by_name_and_by_type(client, varied, alice):
    client.force_login(alice)
    by_name = listed(client, varied, "?sort=name")
    assert [title for title in by_name if title != "broken"] == [
        "Real DB",
        "Reviews",
        "Role",
        "Ship",
        "Wiki",
    ]
    # Untyped first (empty type), then by type name, newest first within a type.
    assert listed(client, varied, "?sort=type") == [
        "broken",
        "Real DB",
        "Reviews",
        "Ship",
        "Wiki",
        "Role",
    ]
    assert listed(client, varied, "?sort=newest") == listed(client, varied)


def test_the_type_filter(client, varied, alice):
    client.force_login(alice)
    assert listed(client, varied, "?type=feedback") == ["Real DB", "Reviews"]
    assert listed(client, varied, "?type=project") == ["Ship"]
    assert listed(client, varied, "?type=untyped") == ["broken"]
    response = client.get(store_url(varied) + "?type=user")
    assert titles(response) == ["Role"]
    assert "1 memory" in text(response)
    assert '<option value="user" selected>user</option>' in response.content.decode()


def test_the_age_filter(client, varied, alice):
    client.force_login(alice)
    assert listed(client, varied, "?age=1") == ["Role", "Real DB"]
    assert listed(client, varied, "?age=7") == ["Role", "Real DB", "Ship"]
    assert listed(client, varied, "?age=30") == ["Role", "Real DB", "Ship", "Wiki"]
    assert listed(client, varied, "?age=stale") == ["Reviews", "broken"]


def test_the_problem_filters(client, varied, alice):
    client.force_login(alice)
    assert listed(client, varied, "?problem=broken") == ["broken"]
    assert listed(client, varied, "?problem=why_how") == ["Real DB"]
    assert listed(client, varied, "?problem=unindexed") == ["broken"]
    assert listed(client, varied, "?problem=dangling") == ["Wiki"]
    assert listed(client, varied, "?problem=relative_dates") == ["Ship"]
    page = text(client.get(store_url(varied)))
    assert "broken frontmatter" in page
    assert "missing Why / How to apply" in page
    assert "links to unwritten: nowhere-yet" in page
    assert "relative date" in page


def test_filters_combine_and_bad_values_are_ignored(client, varied, alice):
    client.force_login(alice)
    assert listed(client, varied, "?type=feedback&age=stale") == ["Reviews"]
    assert listed(client, varied, "?type=nonsense") == listed(client, varied)
    assert titles(client.get(store_url(varied) + "?type=user&problem=broken")) == []
    assert "No memories match." in text(client.get(store_url(varied) + "?type=user&age=stale"))


def test_search_looks_at_name_description_and_body(client, varied, alice):
    client.force_login(alice)
    assert listed(client, varied, "?q=reviews") == ["Reviews"]  # name
    assert listed(client, varied, "?q=WHERE THE WIKI") == ["Wiki"]  # description, any case
    assert listed(client, varied, "?q=PRs small") == ["Reviews"]  # body
    assert listed(client, varied, "?q=customers") == ["Ship"]  # body only
    assert listed(client, varied, "?q=nothing like this") == []


def test_the_scope_filter_on_the_search_page(client, stores, alice):
    client.force_login(alice)
    assert titles(client.get("/search/?scope=private&sort=name")) == ["Real DB", "Role"]
    assert titles(client.get("/search/?scope=team")) == ["Release"]
    assert titles(client.get("/search/?scope=agent")) == ["Style"]
    assert titles(client.get("/search/?scope=team&type=user")) == []
    # The store page lists one store, so it has no scope select.
    assert 'name="scope"' in client.get("/search/").content.decode()
    assert 'name="scope"' not in client.get(store_url(stores.private)).content.decode()


@pytest.fixture
def crowded(stores):
    """The private store with 120 more memories, memory_001 the newest."""
    directory = root(stores.private)
    for n in range(1, 121):
        path = write_memory(directory, f"memory_{n:03}.md", f"Memory {n:03}", f"Hook {n}", "user")
        set_age(path, 1 + n / 100)
    rescan_store(stores.private)
    return stores.private


def test_a_long_list_is_split_into_pages_of_50(client, crowded, alice):
    client.force_login(alice)
    first = client.get(store_url(crowded))
    assert "122 memories · page 1 of 3" in text(first)
    assert len(titles(first)) == 50
    assert sorted(titles(first)[:2]) == ["Real DB", "Role"]
    assert titles(first)[2:5] == ["Memory 001", "Memory 002", "Memory 003"]
    second = titles(client.get(store_url(crowded) + "?page=2"))
    third = titles(client.get(store_url(crowded) + "?page=3"))
    assert (len(second), len(third)) == (50, 22)
    assert third[-1] == "Memory 120"
    assert len(set(titles(first) + second + third)) == 122
    assert "Page 3 of 3" in text(client.get(store_url(crowded) + "?page=99"))


def test_page_links_keep_the_filters(client, crowded, alice):
    client.force_login(alice)
    response = client.get(store_url(crowded) + "?type=user&sort=name")
    assert "121 memories · page 1 of 3" in text(response)
    assert 'href="?type=user&amp;sort=name&amp;page=2"' in response.content.decode()
    second = titles(client.get(store_url(crowded) + "?type=user&sort=name&page=2"))
    assert second[0] == "Memory 051"


def test_htmx_gets_only_the_list_fragment(client, varied, alice):
    client.force_login(alice)
    response = client.get(store_url(varied) + "?type=feedback", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="memory-list">')
    assert "<html" not in html and "MEMORY.md" not in html and 'class="filters"' not in html
    assert titles(response) == ["Real DB", "Reviews"]
    search = client.get("/search/?q=wiki", headers={"HX-Request": "true"})
    assert search.content.decode().lstrip().startswith('<div id="memory-list">')
    assert titles(search) == ["Wiki", "Style"]  # "docs" is a synonym of "wiki": ranked below


def test_without_htmx_the_whole_page_comes_back(client, varied, alice):
    client.force_login(alice)
    html = client.get(store_url(varied) + "?type=feedback").content.decode()
    assert html.startswith("<!doctype html>")
    # Without JavaScript the filter form is submitted with a button.
    assert '<noscript><button type="submit">Filter</button></noscript>' in html


# --- health -----------------------------------------------------------------------------------


def test_health_lists_every_problem_of_a_store(client, varied, alice):
    directory = root(varied)
    write_memory(
        directory,
        "feedback_pr.md",
        "PR size",
        "Small pull-requests!",
        "feedback",
        "**Why:** x\n**How to apply:** y\n",
    )
    long_entry = "- [Long](feedback_pr.md) — " + "very long hook " * 15
    with (directory / "MEMORY.md").open("a") as index:
        index.write("- [Gone](gone.md) — deleted long ago\n" + long_entry + "\n")
    rescan_store(varied)
    client.force_login(alice)
    page = text(client.get(store_url(varied, "store_health")))
    assert "7 of 200 lines" in page
    assert "Entries pointing to missing files (1) line 6: - [Gone](gone.md) — deleted long ago" in (
        page
    )
    assert "Files not in the index (1) broken.md" in page
    assert f"Over-long entries (1) line 7 ({len(long_entry)} characters):" in page
    assert "Near-duplicate memories (1) feedback_pr.md and feedback_done.md (1.00 similar)" in page
    assert "Project memories with relative dates (1) Ship: next Tuesday" in page
    assert "Missing Why / How to apply (1) Real DB: missing Why, How to apply" in page
    assert "Broken frontmatter (1) broken.md:" in page
    assert "Links to memories not written yet (1) Wiki → nowhere-yet" in page


def test_a_healthy_store_says_none_everywhere(client, stores, alice):
    client.force_login(alice)
    page = text(client.get(store_url(stores.team, "store_health")))
    assert "Entries pointing to missing files (0) None." in page
    assert "Files not in the index (0) None." in page
    assert "Near-duplicate memories (0) None." in page
    assert "Rebuild index entries" not in page


def test_rebuild_index_entries_adds_missing_lines_and_keeps_the_rest(client, stores, alice):
    directory = root(stores.private)
    original = (
        b"# Alice's memory\r\n"
        b"- [Role](user_role.md) \xe2\x80\x94 who Alice is\r\n"
        b"\r\n"
        b"* [Real DB](./feedback_tests.md): no mocks, ever\r\n"
    )
    (directory / "MEMORY.md").write_bytes(original)
    write_memory(directory, "reference_ci.md", "CI", "CI runs on every push", "reference")
    write_memory(directory, "sub/user_tz.md", "Time zone", "Alice works from Berlin", "user")
    rescan_store(stores.private)
    client.force_login(alice)
    assert "Rebuild index entries" in text(client.get(store_url(stores.private, "store_health")))

    response = client.post(store_url(stores.private, "rebuild_index"), follow=True)
    assert "Added 2 index entries." in text(response)
    assert (directory / "MEMORY.md").read_bytes() == original + (
        "- [CI](reference_ci.md) — CI runs on every push\r\n"
        "- [Time zone](sub/user_tz.md) — Alice works from Berlin\r\n"
    ).encode()
    page = text(response)
    assert "Files not in the index (0) None." in page
    assert "Rebuild index entries" not in page
    again = client.post(store_url(stores.private, "rebuild_index"), follow=True)
    assert "Every memory already has an index entry." in text(again)
    assert titles(client.get(store_url(stores.private) + "?problem=unindexed")) == []


def test_rebuild_index_is_post_only(client, stores, alice):
    client.force_login(alice)
    assert client.get(store_url(stores.private, "rebuild_index")).status_code == 405


# --- rescan -------------------------------------------------------------------------------------


def test_rescan_picks_up_changes_made_behind_memhubs_back(client, stores, alice):
    directory = root(stores.private)
    client.force_login(alice)
    assert sorted(listed(client, stores.private)) == ["Real DB", "Role"]
    write_memory(directory, "user_editor.md", "Editor", "Alice uses Helix", "user")
    assert "Editor" not in listed(client, stores.private)

    response = client.post(store_url(stores.private, "store_rescan"), follow=True)
    assert response.redirect_chain == [(store_url(stores.private), 302)]
    assert "Rescanned: 1 new, 0 changed, 0 removed, 2 unchanged." in text(response)
    assert "Editor" in titles(response)
    assert "not in index" in text(response)

    (directory / "user_editor.md").write_text(
        "---\nname: Editor\ndescription: Alice switched to Zed\ntype: user\n---\nBody.\n"
    )
    (directory / "user_role.md").unlink()
    response = client.post(store_url(stores.private, "store_rescan"), follow=True)
    assert "Rescanned: 0 new, 1 changed, 1 removed, 1 unchanged." in text(response)
    assert sorted(titles(response)) == ["Editor", "Real DB"]
    assert "Alice switched to Zed" in text(response)


def test_rescan_is_post_only(client, stores, alice):
    client.force_login(alice)
    assert client.get(store_url(stores.private, "store_rescan")).status_code == 405


def test_health_gives_every_frontmatter_problem_of_a_file(client, stores, alice):
    """Each problem on its own line, and a type memhub does not know among them."""
    directory = root(stores.private)
    (directory / "odd.md").write_text(
        "---\nname: [a, b]\ndescription: {x: 1}\ntype: decision\n---\nBody.\n"
    )
    write_memory(directory, "decision_db.md", "DB", "We chose Postgres", "decision")
    rescan_store(stores.private)
    client.force_login(alice)
    response = client.get(store_url(stores.private, "store_health"))
    page = text(response)
    assert "Broken frontmatter (2)" in page
    assert 'decision_db.md: Type "decision" is not one memhub knows' in page
    odd = response.content.decode().split("odd.md</code></a>:")[1].split("</ul>")[0]
    assert [unescape(p) for p in re.findall(r"<li>([^<]+)</li>", odd)] == [
        "name is a list, not text",
        "description is a mapping, not text",
        'Type "decision" is not one memhub knows (user, feedback, project, reference): agents '
        "and filters treat this memory as untyped. Saving keeps it as written; pick a type to "
        "replace it.",
    ]
    listing = client.get(store_url(stores.private)).content.decode()
    assert listing.count(">unknown type</span>") == 2


def test_the_memories_come_first_on_a_store_page(client, stores, alice):
    client.force_login(alice)
    page = client.get(store_url(stores.private)).content.decode()
    assert page.index('id="memories"') < page.index('id="index"')
    assert page.index('id="memories"') < page.index("consolidation")
