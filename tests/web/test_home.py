import pytest

from memapp.stores.discovery import discover_local_stores
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def test_the_home_page_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_the_owner_sees_discovered_directories_with_file_counts(client, memory_base, alice):
    discover_local_stores(memory_base)
    client.login(username="alice", password=PASSWORD)
    page = client.get("/").content.decode()
    assert "3 stores, 4 memories." in page
    assert "-home-alice-app" in page
    assert str(memory_base / "projects" / "-home-alice-app" / "memory") in page
    assert "agent code-reviewer (user scope)" in page


def test_other_users_and_staff_do_not_see_the_owners_private_directories(
    client, memory_base, alice, sam
):
    discover_local_stores(memory_base)
    client.login(username="sam", password=PASSWORD)
    page = client.get("/").content.decode()
    assert "0 stores, 0 memories." in page
    assert "-home-alice-app" not in page
    assert "Ask an admin to add you to a project" in page


def test_a_teammate_sees_the_team_store_only_without_the_servers_paths(
    client, memory_base, alice, bob
):
    discover_local_stores(memory_base)
    from memapp.stores.models import Project

    Project.objects.get().members.add(bob)
    client.login(username="bob", password=PASSWORD)
    page = client.get("/").content.decode()
    assert "1 store, 1 memory." in page
    assert 'href="/stores/' in page
    assert str(memory_base) not in page
    assert "Connect your agent" in page


def test_rescan_finds_directories_created_since(client, memory_base, alice):
    client.login(username="alice", password=PASSWORD)
    assert "No memory directories yet." in client.get("/").content.decode()
    response = client.post("/rescan/", follow=True)
    page = response.content.decode()
    assert "Rescanned: 3 memory directories found." in page
    assert "3 stores, 4 memories." in page


def test_rescan_is_post_only(client, alice):
    client.login(username="alice", password=PASSWORD)
    assert client.get("/rescan/").status_code == 405


def test_logging_in_lands_on_the_home_page(client, alice):
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    bad = client.post("/login/", {"username": "alice", "password": "nope"})
    assert "didn't match" in bad.content.decode()


def test_recent_and_stale_memories_are_the_newest_and_oldest_of_the_person_s_stores(
    client, memory_base, alice, monkeypatch
):
    import re
    import time

    from memapp.stores.models import DAY_MS, MemoryFile
    from memapp.web.views import home

    discover_local_stores(memory_base)
    now = int(time.time() * 1000)
    files = list(MemoryFile.objects.order_by("path"))
    for age, file in enumerate(files):  # the first by path is the newest; the last two stale
        file.mtime_ms = now - (age * 100 if age < 2 else 400 + age) * DAY_MS
        file.save(update_fields=["mtime_ms"])
    monkeypatch.setattr(home, "RECENT", 2)
    client.login(username="alice", password=PASSWORD)
    page = client.get("/").content.decode()

    def listed(heading: str) -> list[str]:
        section = page.split(f"<h2>{heading}", 1)[1].split("</section>", 1)[0]
        return re.findall(r'href="/stores/\d+/m/([^"]+)"', section)

    assert listed("Recently changed") == [files[0].path, files[1].path]
    assert listed("Stale") == [files[-1].path, files[-2].path]
