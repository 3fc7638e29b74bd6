"""Rows inserted by one `executemany` read back as `bulk_create`'s would (JSON, bytes and
datetimes prepared by their fields), on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.forms.models import model_to_dict
from django.utils import timezone

from memapp.stores.bulk import insert_rows
from memapp.stores.models import Blob, MemoryFile, MemoryVersion, Store

pytestmark = pytest.mark.django_db

FILE_COLUMNS = (
    "store_id", "path", "name", "links", "dangling_links", "in_index", "size", "mtime_ms"
)  # fmt: skip


@pytest.fixture
def store(tmp_path, alice) -> Store:
    return Store.objects.create(kind="private", origin="managed", path=str(tmp_path), owner=alice)


def _file(store: Store, path: str) -> tuple:
    return (store.pk, path, "Ünïcode ‘name’", ["a", "b c"], [{"x": 1}], True, 2**40, -1)


def test_it_reads_back_what_bulk_create_writes_defaults_and_all(store):
    insert_rows(MemoryFile, FILE_COLUMNS, [_file(store, "raw.md")])
    MemoryFile.objects.bulk_create(
        [MemoryFile(**dict(zip(FILE_COLUMNS, _file(store, "orm.md"), strict=True)))]
    )
    raw, orm = (
        model_to_dict(store.files.get(path=p), exclude=["id", "path"]) for p in ("raw.md", "orm.md")
    )
    assert raw == orm
    assert raw["links"] == ["a", "b c"] and raw["dangling_links"] == [{"x": 1}]


def test_bytes_and_datetimes_keep_their_values(store, alice):
    when = timezone.now()
    data = bytes(range(256))
    insert_rows(Blob, ("sha256", "data", "size"), [("f" * 64, data, 256)])
    columns = ("store_id", "path", "sha256", "via", "user_id", "created_at")
    insert_rows(MemoryVersion, columns, [(store.pk, "a.md", "f" * 64, "ui", alice.pk, when)])
    assert bytes(Blob.objects.get(sha256="f" * 64).data) == data
    version = store.versions.get()
    assert (version.created_at, version.user, version.size) == (when, alice, 0)


def test_ignore_conflicts_leaves_the_existing_row(store):
    Blob.objects.create(sha256="e" * 64, data=b"first", size=5)
    rows = [("e" * 64, b"second", 6), ("d" * 64, b"new", 3)]
    insert_rows(Blob, ("sha256", "data", "size"), rows, ignore_conflicts=True)
    assert {b.sha256[0]: bytes(b.data) for b in Blob.objects.all()} == {"e": b"first", "d": b"new"}


def test_a_failing_row_inserts_none(store):
    rows = [_file(store, "one.md"), _file(store, "two.md"), _file(store, "one.md")]
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(MemoryFile, FILE_COLUMNS, rows)
    assert not store.files.exists()
