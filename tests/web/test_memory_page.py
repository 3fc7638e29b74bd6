"""The memory page: frontmatter fields, the staleness note an agent sees, links and backlinks."""

from __future__ import annotations

import hashlib
import re

import pytest

from memapp.stores.mirror import rescan_store
from tests.conftest import write_memory
from tests.web.memory_pages import STALENESS, pre, root, set_age, text, url

pytestmark = pytest.mark.django_db


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
    with django_assert_max_num_queries(13):
        page = text(client.get(url("memory", stores.private, "user_role.md")))
    assert len(page.split("Backlinks", 1)[1].split()) == 60


def test_a_memory_with_broken_frontmatter_shows_the_problem(client, stores, alice):
    (root(stores.private) / "broken.md").write_text("---\njust a sentence\n---\nBody.\n")
    rescan_store(stores.private)
    client.force_login(alice)
    page = text(client.get(url("memory", stores.private, "broken.md")))
    assert "Frontmatter problem: frontmatter is not a mapping (it is a string)" in page
    assert "Name — Description — Type untyped" in page


def test_a_file_larger_than_a_memory_is_shown_in_part_and_not_edited(client, stores, alice):
    """An agent's 2 MB dump: its page shows the first 250,000 bytes and says so (whole, a
    50 MB file made a 50 MB page), and the edit form, whose save would be refused, says why."""
    body = "é" * 1_000_000  # two bytes each: the cut must not split one
    path = root(stores.private) / "reference_dump.md"
    path.write_text(f"---\nname: Dump\ndescription: a dump\ntype: reference\n---\n{body}\n")
    rescan_store(stores.private)
    client.force_login(alice)
    page = client.get(url("memory", stores.private, "reference_dump.md"))
    assert page.status_code == 200
    shown = text(page)
    size = f"{path.stat().st_size:,}"
    assert (
        f"This file is {size} bytes, over the 250,000 a memory may hold, so only its first "
        "250,000 are shown and it cannot be edited here: forget it, or shorten it on disk."
    ) in shown
    assert len(page.content) < 400_000
    assert "Frontmatter problem" not in shown and "\ufffd" not in shown
    edit = client.get(url("memory_edit", stores.private, "reference_dump.md"), follow=True)
    assert f"reference_dump.md cannot be edited. This file is {size} bytes" in text(edit)
    assert path.read_text().endswith(body + "\n")
    # A save from a form opened before the file grew is the person's text, not dropped.
    fields = {"name": "Dump", "description": "a dump", "type": "reference", "body": "Short.\n"}
    base = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    client.post(
        url("memory_edit", stores.private, "reference_dump.md"),
        {**fields, "base_sha256": base, "save_anyway": "1"},
    )
    assert path.read_text().endswith("---\nShort.\n")
