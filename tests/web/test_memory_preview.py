"""Markdown preview while editing, and the lint for `[[links]]` to names no memory has: with
htmx (the preview and lint endpoints) and without JavaScript (the Preview button)."""

from __future__ import annotations

import pytest

from tests.web.memory_pages import base_sha256, root, text, url

pytestmark = pytest.mark.django_db

BODY = "Use **the real** database. See [[Role]] and [[deploy-checklist]].\n<script>x()</script>\n"


def test_the_preview_button_renders_the_body_and_saves_nothing(client, stores, alice):
    client.force_login(alice)
    before = (root(stores.private) / "feedback_tests.md").read_bytes()
    form = client.get(url("memory_edit", stores.private, "feedback_tests.md"))
    response = client.post(
        url("memory_edit", stores.private, "feedback_tests.md"),
        {
            "base_sha256": base_sha256(form),
            "name": "Real DB",
            "description": "Tests hit a real database",
            "type": "user",
            "body": BODY,
            "preview": "1",
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>the real</strong>" in html
    assert 'class="wikilink" href="/stores/' in html  # Role exists
    assert 'class="wikilink missing" title="No memory named deploy-checklist yet">' in html
    assert "<script>x()</script>" not in html  # raw HTML is shown as text
    assert "Link [[deploy-checklist]] names no memory in this store yet." in text(response)
    assert "Use **the real** database." in html  # the form comes back as typed
    assert (root(stores.private) / "feedback_tests.md").read_bytes() == before


def test_a_new_memory_can_be_previewed_before_it_exists(client, stores, alice):
    client.force_login(alice)
    response = client.post(
        url("memory_create", stores.private),
        {
            "name": "Wiki",
            "description": "Where docs live",
            "type": "reference",
            "body": "# Hi\n",
            "preview": "1",
        },
    )
    assert "<h1>Hi</h1>" in response.content.decode()
    assert not (root(stores.private) / "reference_wiki.md").exists()


def test_the_preview_endpoint_answers_with_the_rendered_body(client, stores, alice):
    client.force_login(alice)
    response = client.post(url("memory_preview", stores.private), {"body": BODY})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="preview"')
    assert "<strong>the real</strong>" in html and "&lt;script&gt;" in html


def test_the_preview_of_someone_elses_store_is_a_404(client, stores, bob):
    client.force_login(bob)
    assert client.post(url("memory_preview", stores.private), {"body": "x"}).status_code == 404


def test_live_warnings_name_links_to_memories_not_written_yet(client, stores, alice):
    client.force_login(alice)
    response = client.post(
        url("memory_lint", stores.private),
        {"type": "user", "description": "d", "body": "[[Role]] [[Real DB]] [[nope]] [[nope]]"},
    )
    assert text(response) == "Link [[nope]] names no memory in this store yet."


def test_saving_with_an_unknown_link_asks_first_then_saves(client, stores, alice):
    client.force_login(alice)
    fields = {
        "name": "Wiki",
        "description": "Where docs live",
        "type": "reference",
        "body": "See [[onboarding]].\n",
    }
    first = client.post(url("memory_create", stores.private), fields)
    assert "Save anyway" in first.content.decode()
    assert not (root(stores.private) / "reference_wiki.md").exists()
    second = client.post(url("memory_create", stores.private), {**fields, "save_anyway": "1"})
    assert second.status_code == 302
    assert (root(stores.private) / "reference_wiki.md").exists()
