import pytest

from memapp.stores.events import UnknownEventError, record_event
from memapp.stores.models import Event, Project, Store

pytestmark = pytest.mark.django_db


def test_it_records_an_event_with_its_fields(alice):
    project = Project.objects.create(key="acme/app")
    record_event(
        "sync_pull",
        project=project,
        user=alice,
        success=True,
        files_written=3,
        not_modified=False,
        duration_ms=41,
    )
    event = Event.objects.get()
    assert (event.kind, event.project, event.user) == ("sync_pull", project, alice)
    assert event.fields == {
        "success": True,
        "files_written": 3,
        "not_modified": False,
        "duration_ms": 41,
    }


def test_it_refuses_unknown_kinds_and_fields():
    with pytest.raises(UnknownEventError, match="unknown event kind 'sync_pulled'"):
        record_event("sync_pulled")
    with pytest.raises(UnknownEventError, match=r"event 'secret_skipped' has no field\(s\) value"):
        record_event("secret_skipped", file_count=1, rule_ids=["github-pat"], value="ghp_…")
    assert not Event.objects.exists()


def test_an_event_about_a_store_belongs_to_its_project(alice):
    project = Project.objects.create(key="acme/app")
    store = Store.objects.create(
        kind="private", origin="managed", path="/x", project=project, owner=alice
    )
    event = record_event("memory_forgotten", store=store, user=alice, path="a.md", via="ui")
    assert event.project == project and event.store == store
