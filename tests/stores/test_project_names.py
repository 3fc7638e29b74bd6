"""One project has one identity however an agent or a person spells it (docs/design.md §1): a
repo slug with git's `.git`, a git remote URL, an old slug in another case and the staff's
New project form all reach the project memhub has, with its membership check, and never make a
second project for the same repository.

acme/widgets has alice and bob as members; charlie belongs to nothing; sam is staff."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memapp.stores.flags import set_flag
from memapp.stores.identity import do_set_project_slug
from memapp.stores.models import Project, Store
from memapp.stores.projects import no_project_message, resolve_store
from tests.api.conftest import api_client

pytestmark = pytest.mark.django_db

SLUG = "acme/widgets"
SPELLINGS = [
    "acme/widgets.git",
    "ACME/Widgets.GIT",
    "git@github.com:acme/widgets.git",
    "https://github.com/ACME/widgets",
    "ssh://git@github.com/acme/widgets.git",
]
TOPIC = "---\nname: CI\ndescription: CI runs on every push\ntype: project\n---\nYes.\n"


@pytest.fixture
def project(alice, bob) -> Project:
    project = Project.objects.create(key=SLUG, repo_slug=SLUG)
    project.members.add(alice, bob)
    return project


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_member_reaches_the_project_by_any_spelling_of_its_repo(project, bob, spelling):
    mine = resolve_store(bob, SLUG, "private")
    answer = api_client(bob).post(
        "/api/v1/stores/resolve", {"project": spelling, "scope": "private"}, format="json"
    )
    assert answer.status_code == 200
    assert answer.json()["id"] == mine.pk
    assert list(Project.objects.values_list("key", flat=True)) == [SLUG]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_non_member_who_may_create_projects_gets_no_second_project(project, charlie, spelling):
    """With `protocol_project_creation` open to everyone, charlie's agent naming acme/widgets
    another way is told what it is told for acme/widgets itself: no project made, no store."""
    set_flag("protocol_project_creation", "everyone")
    answer = api_client(charlie).post(
        "/api/v1/stores/resolve", {"project": spelling, "scope": "private"}, format="json"
    )
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "no_project"
    assert list(Project.objects.values_list("key", flat=True)) == [SLUG]
    assert not Store.objects.filter(owner=charlie).exists()


def test_the_team_memory_protocol_takes_the_repo_with_git_as_the_same_repo(project, sam):
    """Staff may create projects: a PUT naming `acme/widgets.git` writes acme/widgets' team
    memory instead of making a second project (and a second folder in the shared repository)."""
    project.members.add(sam)
    url = "/api/claude_code/team_memory?repo=acme%2Fwidgets.git"
    put = api_client(sam).put(url, {"entries": {"project_ci.md": TOPIC}}, format="json")
    assert put.status_code == 200
    assert put.json()["repo"] == SLUG
    assert list(Project.objects.values_list("key", flat=True)) == [SLUG]
    got = api_client(sam).get("/api/claude_code/team_memory?repo=acme%2Fwidgets")
    assert "project_ci.md" in got.json()["content"]["entries"]


def test_an_old_slug_in_another_case_still_names_the_renamed_project(project, bob, sam):
    do_set_project_slug(project, "acme/gadgets", by=sam)
    mine = resolve_store(bob, "acme/gadgets", "private")
    for spelling in ("acme/widgets", "ACME/Widgets", "acme/widgets.git"):
        answer = api_client(bob).post(
            "/api/v1/stores/resolve", {"project": spelling, "scope": "private"}, format="json"
        )
        assert answer.status_code == 200, spelling
        assert answer.json()["id"] == mine.pk, spelling
    assert Project.objects.count() == 1


def test_an_unknown_repo_spelt_as_a_remote_is_no_project_by_its_slug(charlie):
    set_flag("protocol_project_creation", "everyone")
    answer = api_client(charlie).post(
        "/api/v1/stores/resolve",
        {"project": "git@github.com:acme/nothing.git", "scope": "private"},
        format="json",
    )
    assert answer.status_code == 200  # charlie may create it: under its slug, once
    assert list(Project.objects.values_list("key", "repo_slug")) == [
        ("acme/nothing", "acme/nothing")
    ]


@pytest.mark.parametrize("spelling", ["ACME/Widgets", "acme/widgets.git", "acme/old"])
def test_staff_cannot_create_a_project_another_name_of_one_that_exists(
    client, project, sam, spelling
):
    project.aliases.create(name="acme/old")
    client.force_login(sam)
    page = client.post(reverse("project_create"), {"key": spelling})
    assert page.status_code == 200
    assert f"The project {SLUG} exists already" in page.content.decode()
    assert Project.objects.count() == 1


def test_staff_cannot_give_another_project_a_slug_in_another_case(client, project, sam):
    other = Project.objects.create(key="-home-sam-widgets")
    client.force_login(sam)
    page = client.post(
        reverse("project_identity", args=[other.pk]), {"slug": "ACME/Widgets", "aliases": ""}
    )
    assert "already the project acme/widgets" in page.content.decode()
    other.refresh_from_db()
    assert other.repo_slug == ""


def test_a_non_member_is_told_the_same_whichever_spelling_he_tried(charlie, project):
    """So no spelling tells him more of acme/widgets than its slug does (its case is his)."""
    api = api_client(charlie)
    for spelling in (SLUG, *SPELLINGS):
        answer = api.post(
            "/api/v1/stores/resolve", {"project": spelling, "scope": "team"}, format="json"
        )
        assert answer.status_code == 404, spelling
        said = answer.json()["error"]["message"]
        assert said.casefold() == no_project_message(SLUG).casefold(), spelling


LOOK_ALIKES = ["ａｃｍｅ/widgets", "\u0430cme/widgets", "acme/widgets\u200b"]  # fmt: skip


@pytest.mark.parametrize("spelling", LOOK_ALIKES)
def test_nobody_makes_a_project_whose_name_only_looks_like_another(
    client, project, charlie, sam, spelling
):
    """Full-width letters, a Cyrillic а or a zero-width space read as acme/widgets to a person
    choosing among projects; git hosts name repositories in ASCII, so no new project is made
    under such a name, by an agent or by staff."""
    set_flag("protocol_project_creation", "everyone")
    answer = api_client(charlie).post(
        "/api/v1/stores/resolve", {"project": spelling, "scope": "private"}, format="json"
    )
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "no_project"
    client.force_login(sam)
    page = client.post(reverse("project_create"), {"key": spelling})
    assert "Use owner/repo in plain letters" in page.content.decode()
    assert list(Project.objects.values_list("key", flat=True)) == [SLUG]
    assert not Store.objects.filter(owner=charlie).exists()


GADGETS = ["acme/gadgets.git", "acme/gadgets", "git@github.com:acme/gadgets.git"]


@pytest.mark.parametrize("spelling", GADGETS)
def test_a_project_made_under_gits_spelling_before_is_still_its_members(bob, spelling):
    """Before names were read as `canonical_ref` reads them, an agent naming `acme/gadgets.git`
    made a project of that key. Its members still reach it, by that name and by the repo's
    others, and no second project of the repository is made beside it."""
    set_flag("protocol_project_creation", "everyone")
    old = Project.objects.create(key="acme/gadgets.git", repo_slug="acme/gadgets.git")
    old.members.add(bob)
    answer = api_client(bob).post(
        "/api/v1/stores/resolve", {"project": spelling, "scope": "private"}, format="json"
    )
    assert answer.status_code == 200
    assert Store.objects.get(pk=answer.json()["id"]).project == old
    assert list(Project.objects.values_list("key", flat=True)) == ["acme/gadgets.git"]


def test_a_project_of_the_name_itself_goes_before_an_older_one_called_it_with_git(bob):
    """An older project once called `acme/widgets.git` (an alias from before names were read
    so) does not take acme/widgets' agents: the project of the name itself answers."""
    older = Project.objects.create(key="-home-bob-widgets")
    older.aliases.create(name="acme/widgets.git")
    older.members.add(bob)
    project = Project.objects.create(key=SLUG, repo_slug=SLUG)
    project.members.add(bob)
    for spelling in (SLUG, "acme/widgets.git"):
        answer = api_client(bob).post(
            "/api/v1/stores/resolve", {"project": spelling, "scope": "private"}, format="json"
        )
        assert Store.objects.get(pk=answer.json()["id"]).project == project, spelling
