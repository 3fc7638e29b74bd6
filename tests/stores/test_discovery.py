import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from memapp.memdir.memory_dirs import discover_memory_dirs
from memapp.memdir.paths import sanitize_path
from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Event, Project, Store
from memapp.stores.projects import resolve_store
from tests.api.conftest import api_client
from tests.conftest import write_memory


def test_it_finds_private_team_and_agent_directories(memory_base):
    found = discover_memory_dirs(memory_base)
    assert [(f.kind, f.path.relative_to(memory_base).as_posix(), f.exclude) for f in found] == [
        ("private", "projects/-home-alice-app/memory", ("team",)),
        ("team", "projects/-home-alice-app/memory/team", ()),
        ("agent", "agent-memory/code-reviewer", ()),
    ]
    assert found[0].project_dirname == "-home-alice-app"
    assert found[2].agent_type == "code-reviewer"


def test_team_mounts_with_their_own_index_are_stores_of_their_own(memory_base):
    team = memory_base / "projects" / "-home-alice-app" / "memory" / "team"
    write_memory(team / "backend", "api.md", "API", "API conventions", "project")
    (team / "backend" / "MEMORY.md").write_text("- [API](api.md) — conventions\n")
    stores = [f for f in discover_memory_dirs(memory_base) if f.kind == "team"]
    assert [(s.mount, s.exclude) for s in stores] == [("", ("backend",)), ("backend", ())]


def test_missing_directories_are_not_errors(tmp_path):
    assert discover_memory_dirs(tmp_path / "nowhere") == []
    (tmp_path / "projects" / "-p").mkdir(parents=True)  # a project without memory yet
    assert discover_memory_dirs(tmp_path) == []


def test_symlinked_directories_are_not_followed(memory_base, tmp_path):
    outside = tmp_path / "outside"
    write_memory(outside / "memory", "x.md", "X", "elsewhere", "user")
    (memory_base / "projects" / "-evil").symlink_to(outside)
    assert all("-evil" not in str(f.path) for f in discover_memory_dirs(memory_base))


@pytest.mark.django_db
def test_discovered_stores_belong_to_the_first_superuser(memory_base, alice, bob):
    result = discover_local_stores(memory_base)
    assert (result.found, result.removed) == (3, 0)
    private = Store.objects.get(kind="private")
    assert private.owner == alice and private.file_count == 2  # team/ is a store of its own
    team = Store.objects.get(kind="team")
    assert team.owner is None and team.file_count == 1
    assert list(team.project.members.all()) == [alice]
    assert Store.objects.get(kind="agent").agent_scope == "user"
    assert list(
        Store.objects.visible_to(alice).order_by("kind").values_list("kind", flat=True)
    ) == ["agent", "private", "team"]
    assert not Store.objects.visible_to(bob).exists()
    assert Event.objects.get(kind="stores_discovered").fields["found"] == 3


@pytest.mark.django_db
def test_memhub_local_owner_names_the_owner(memory_base, alice, bob, settings):
    settings.MEMHUB_LOCAL_OWNER = "bob"
    discover_local_stores(memory_base)
    assert Store.objects.get(kind="private").owner == bob


@pytest.mark.django_db
def test_until_an_owner_exists_discovered_stores_are_shown_to_nobody(memory_base, bob):
    discover_local_stores(memory_base)
    assert Store.objects.get(kind="private").owner is None
    assert not Store.objects.visible_to(bob).exists()


@pytest.mark.django_db
def test_a_rescan_picks_up_new_files_and_drops_vanished_directories(memory_base, alice):
    discover_local_stores(memory_base)
    private = Path(Store.objects.get(kind="private").path)
    write_memory(private, "project_new.md", "New", "A new memory", "project")
    (memory_base / "agent-memory" / "code-reviewer" / "reference_style.md").unlink()
    (memory_base / "agent-memory" / "code-reviewer").rmdir()
    result = discover_local_stores(memory_base)
    assert result.removed == 1
    assert Store.objects.get(kind="private").file_count == 3
    assert not Store.objects.filter(kind="agent").exists()
    assert private.joinpath("project_new.md").exists()  # disk is never touched


@pytest.mark.django_db
def test_the_discover_command_lists_what_it_found(memory_base, alice, capsys):
    call_command("discover")
    out = capsys.readouterr().out
    assert f"Looking for memory directories under {memory_base}" in out
    assert "Found 3 memory directories." in out
    assert "2 files" in out


@pytest.mark.django_db
def test_discovery_can_be_turned_off(memory_base, alice, settings, capsys):
    settings.MEMHUB_DISCOVER = False
    call_command("discover")
    assert "Discovery is off (MEMHUB_DISCOVER=0)." in capsys.readouterr().out
    assert not Store.objects.exists()


def _project_dir(memory_base: Path, checkout: Path) -> Path:
    memory = memory_base / "projects" / sanitize_path(str(checkout)) / "memory"
    write_memory(memory, "user_role.md", "Role", "Ana is a backend engineer", "user")
    return memory


@pytest.mark.django_db
def test_a_discovered_project_is_shown_by_its_repo_slug_or_its_path(memory_base, tmp_path, alice):
    repo = tmp_path / "src" / "my-app"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/my-app.git"],
        check=True,
    )
    plain = tmp_path / "notes.d" / "scratch"
    plain.mkdir(parents=True)
    _project_dir(memory_base, repo)
    _project_dir(memory_base, plain)
    discover_local_stores(memory_base)
    shown = sorted(str(s.project) for s in Store.objects.filter(kind="private"))
    assert shown == ["-home-alice-app", str(plain), "acme/my-app"]  # the first is not on disk
    project = Project.objects.get(key="acme/my-app")  # the slug is its identity (docs/design.md §1)
    assert project.repo_slug == "acme/my-app"
    assert list(project.aliases.values_list("name", flat=True)) == [sanitize_path(str(repo))]


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


@pytest.mark.django_db
def test_a_checkout_given_a_remote_later_makes_its_project_the_slug_not_a_second_one(
    memory_base, tmp_path, alice
):
    repo = tmp_path / "ux-demo"
    _git("init", "-q", str(repo))
    _project_dir(memory_base, repo)
    discover_local_stores(memory_base)
    dirname = sanitize_path(str(repo))
    assert Project.objects.filter(key=dirname).exists()
    before = Project.objects.count()
    _git("-C", str(repo), "remote", "add", "origin", "https://github.com/acme/payments.git")
    discover_local_stores(memory_base)
    assert Project.objects.count() == before  # still one project: the same one, re-keyed
    project = Project.objects.get(aliases__name=dirname)
    assert (project.key, project.repo_slug, str(project)) == ("acme/payments",) * 3
    assert list(project.aliases.values_list("name", flat=True)) == [dirname]
    assert Store.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_two_checkouts_of_one_repository_are_one_project(memory_base, tmp_path, alice):
    for name in ("one", "two"):
        _git("init", "-q", str(tmp_path / name))
        _git("-C", str(tmp_path / name), "remote", "add", "origin", "git@github.com:acme/app.git")
        _project_dir(memory_base, tmp_path / name)
    discover_local_stores(memory_base)
    project = Project.objects.get(key="acme/app")
    assert sorted(project.aliases.values_list("name", flat=True)) == sorted(
        sanitize_path(str(tmp_path / n)) for n in ("one", "two")
    )


def test_gemini_clis_memory_dirs_are_private_stores_of_the_same_project(
    memory_base, tmp_path, alice
):
    """Gemini CLI 0.61 keeps a project's memory in `~/.gemini/tmp/<id>/memory/`, the id given by
    `~/.gemini/projects.json` (docs/design.md §28): the store belongs to the project Claude
    Code's directory of the same folder belongs to, and recall keeps using Claude Code's."""
    gemini = tmp_path / "gemini-home" / ".gemini"
    memory = gemini / "tmp" / "app" / "memory"
    write_memory(memory, "project_ci.md", "CI", "CI runs on every push", "project")
    (memory / "MEMORY.md").write_text("- [CI](project_ci.md) — every push\n")
    write_memory(memory / "skills" / "deploy", "SKILL.md", "Deploy", "How to deploy", "reference")
    (gemini / "projects.json").write_text('{"projects": {"/home/alice/app": "app"}}')
    (gemini / "tmp" / "orphan" / "memory").mkdir(parents=True)  # no project it belongs to

    discover_local_stores(memory_base)

    store = Store.objects.get(path=str(memory))
    assert (store.kind, store.agent_type, store.project.key) == (
        "private",
        "gemini-cli",
        "-home-alice-app",
    )
    assert list(store.files.values_list("path", flat=True)) == ["project_ci.md"]  # no skills
    assert not Store.objects.filter(path__contains="orphan").exists()
    claude = resolve_store(alice, "-home-alice-app", "private")
    assert claude.path == str(memory_base / "projects" / "-home-alice-app" / "memory")


def test_codex_clis_own_memories_are_mirrored_read_only(memory_base, tmp_path, alice):
    """Codex CLI 0.171 writes its generated memories under `$CODEX_HOME/memories/` (docs/design.md
    §28): shown as a store of their own, never written by memhub, never what memhub recalls."""
    memories = tmp_path / "codex-home" / "memories"
    (memories / "rollout_summaries").mkdir(parents=True)
    (memories / "MEMORY.md").write_text("# Task group: tests\n- The suite needs a real database\n")
    (memories / "memory_summary.md").write_text("v1\n## User preferences\n- terse answers\n")
    (memories / "rollout_summaries" / "2026-11-01-tests.md").write_text("thread: tests\n")
    (memories / "skills" / "db").mkdir(parents=True)
    (memories / "skills" / "db" / "SKILL.md").write_text("---\nname: db\n---\n")

    discover_local_stores(memory_base)

    store = Store.objects.get(path=str(memories))
    assert (store.kind, store.agent_scope, store.project, store.read_only) == (
        "agent", "user", None, True
    )  # fmt: skip
    assert sorted(store.files.values_list("path", flat=True)) == [
        "memory_summary.md", "rollout_summaries/2026-11-01-tests.md"
    ]  # fmt: skip
    client = Client()
    client.force_login(alice)
    for view in ("memory_edit", "memory_forget"):
        url = reverse(view, args=[store.pk, "memory_summary.md"])
        for answer in (client.get(url, follow=True), client.post(url, follow=True)):
            assert "memhub mirrors them read-only" in answer.content.decode()
    assert (memories / "memory_summary.md").read_text().startswith("v1\n")
    alice_api = api_client(alice)
    refused = alice_api.delete(f"/api/v1/stores/{store.pk}/files/memory_summary.md")
    assert refused.status_code == 403, refused.content
    assert refused.json()["error"]["code"] == "read_only"
    assert (memories / "memory_summary.md").exists()
    prompt = alice_api.post(
        "/api/v1/prompt",
        {"project": "-home-alice-app", "agent_type": store.agent_type},
        format="json",
    )
    assert prompt.status_code == 404  # never served as an agent's memory
    recall = alice_api.post(
        "/api/v1/recall",
        {"project": "-home-alice-app", "query": "terse answers real database"},
        format="json",
    ).json()
    assert all("codex-home" not in m["path"] for m in recall["memories"])
