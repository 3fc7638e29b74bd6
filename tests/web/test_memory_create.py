"""Creating a memory: a file in the directory's own style, warnings before a first save."""

from __future__ import annotations

import pytest

from memapp.stores.mirror import rescan_store
from memapp.stores.models import Store
from tests.web.memory_pages import INDEX, root, text, url

pytestmark = pytest.mark.django_db


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
