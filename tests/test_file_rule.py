"""Every part of memhub that walks a store agrees on its memory files (docs/design.md §6a): the
core, the mirror behind the review UI, the files API, the team memory protocol, the git engine
of team sync, `memhub-agent sync` and `memhub-agent team sync`, each run on the same tricky
tree, and on which of those files may be sent or shared (the entry checks)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from memapp.client.sync import scan_local
from memapp.client.team import scan_team_dir
from memapp.memdir.store_files import (
    MAX_ENTRY_BYTES,
    FileKind,
    FileRejected,
    check_entry,
    classify,
    read_store,
    store_checksums,
)
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project, Store
from memapp.stores.tokens import do_create_api_token
from teamsync.engine import StoreSpec, TeamClone
from tests.teamsync.gitutil import make_bare

NESTED = "team"  # a top-level folder that is a store of its own (as in a private store)

# key -> what the rule calls it; the content of each is written by `tricky_tree`.
TREE: dict[str, FileKind] = {
    "MEMORY.md": FileKind.INDEX,
    "a.md": FileKind.TOPIC,
    "a/b.md": FileKind.TOPIC,
    "latin1.md": FileKind.TOPIC,  # a memory file, which no sync may send: not UTF-8
    "huge.md": FileKind.TOPIC,  # a memory file, which no sync may send: over the size cap
    ".hidden.md": FileKind.HIDDEN,
    ".drafts/n.md": FileKind.HIDDEN,
    "logs/2026/01/2026-01-02.md": FileKind.DAILY_LOG,
    f"{NESTED}/t.md": FileKind.NESTED_STORE,
    "notes.txt": FileKind.NOT_MARKDOWN,
    "a.remote-ab12cd34.md": FileKind.CONFLICT_COPY,
}
LINK = "link.md"  # a symlink: a memory file's name, never followed
MEMORY_FILES = {key for key, kind in TREE.items() if kind in (FileKind.TOPIC, FileKind.INDEX)}
TOPICS = {key for key in MEMORY_FILES if not key.endswith("MEMORY.md")}
SENDABLE = MEMORY_FILES - {"latin1.md", "huge.md"}


def tricky_tree(root: Path) -> Path:
    for key in TREE:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nname: {key}\ndescription: {key}\n---\nBody of {key}.\n")
    (root / "MEMORY.md").write_text("- [A](a.md) — a\n- [B](a/b.md) — b\n")
    (root / "latin1.md").write_bytes("---\nname: café\n---\n".encode("latin-1"))
    (root / "huge.md").write_text("x" * (MAX_ENTRY_BYTES + 1))
    (root / LINK).symlink_to(root / "a.md")
    return root


def test_the_rule_names_every_key_of_the_tree():
    assert {key: classify(key, (NESTED,)) for key in TREE} == TREE
    assert classify(f"{NESTED}/t.md") is FileKind.TOPIC  # only where the store says so
    assert classify("logs.md") is FileKind.TOPIC  # a file named like the folder is a file
    assert classify("notes/logs/x.md") is FileKind.TOPIC  # only the top-level logs/
    assert classify("a.remote-ab12cd34-2.md") is FileKind.CONFLICT_COPY
    assert classify("a.remote-notahash.md") is FileKind.TOPIC


# --- what each part sees -------------------------------------------------------------------


def core(root: Path, store: Store) -> set[str]:
    return set(read_store(root, (NESTED,)))


def mirror(root: Path, store: Store) -> set[str]:
    """The mirror lists topic files; the store's index is the MEMORY.md beside them."""
    rescan_store(store)
    listed = set(store.files.values_list("path", flat=True))
    return listed | ({"MEMORY.md"} if (root / "MEMORY.md").is_file() else set())


def files_api(root: Path, store: Store) -> set[str]:
    client = _api(store)
    rescan_store(store)
    return set(client.get(f"/api/v1/stores/{store.pk}/files/?view=hashes").json()["checksums"])


def protocol(root: Path, store: Store) -> set[str]:
    store.kind = Store.Kind.TEAM
    store.project = Project.objects.create(key="acme/app")
    store.project.members.add(store.owner)
    store.save()
    answer = _api(store).get("/api/claude_code/team_memory?repo=acme%2Fapp").json()
    assert set(answer["content"]["entryChecksums"]) == set(answer["content"]["entries"])
    return set(answer["content"]["entries"])


def git_engine(root: Path, store: Store) -> set[str]:
    """What team sync looks at: committed, or kept back by the entry checks."""
    clone = TeamClone(root.parent / "clone", str(make_bare(root.parent / "team.git")))
    clone.ensure()
    result = clone.commit_local(
        StoreSpec("acme/app", root, {}, (NESTED,)),
        secret_check=lambda texts: {},
        max_entries=500,
        max_entry_bytes=MAX_ENTRY_BYTES,
    )
    assert set(result.blocked) == {"latin1.md", "huge.md"}
    assert set(result.too_large) == {"huge.md"} and set(result.invalid) == {"latin1.md"}
    return set(result.committed) | set(result.blocked)


def agent_sync(root: Path, store: Store) -> set[str]:
    checksums, untouchable = scan_local(root)
    assert untouchable == {LINK}
    return set(checksums)


def agent_team_sync(root: Path, store: Store) -> set[str]:
    """A team directory has no store of its own inside it: the nested one is its."""
    files, untouchable = scan_team_dir(root)
    assert untouchable == {LINK}
    return set(files) - {f"{NESTED}/t.md"}


CALLERS: dict[str, Callable[[Path, Store], set[str]]] = {
    "core": core,
    "mirror and review UI": mirror,
    "files API": files_api,
    "team memory protocol": protocol,
    "git engine": git_engine,
    "memhub-agent sync": agent_sync,
    "memhub-agent team sync": agent_team_sync,
}


def _api(store: Store) -> APIClient:
    _, token = do_create_api_token(store.owner, "test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("caller", CALLERS)
def test_every_caller_sees_the_same_memory_files(caller, tmp_path, alice):
    root = tricky_tree(tmp_path / "store")
    store = Store.objects.create(
        kind=Store.Kind.PRIVATE, path=str(root), owner=alice, exclude=[NESTED]
    )

    assert CALLERS[caller](root, store) == MEMORY_FILES


@pytest.mark.django_db
def test_the_mirror_lists_unsendable_files_with_their_problem(tmp_path, alice):
    root = tricky_tree(tmp_path / "store")
    store = Store.objects.create(
        kind=Store.Kind.PRIVATE, path=str(root), owner=alice, exclude=[NESTED]
    )
    rescan_store(store)

    assert set(store.files.values_list("path", flat=True)) == TOPICS
    assert store.file_count == len(TOPICS)
    assert "invalid UTF-8" in store.files.get(path="latin1.md").problem


def test_the_entry_checks_let_through_exactly_what_every_sync_sends(tmp_path):
    root = tricky_tree(tmp_path / "store")
    sendable = set()
    for key, data in read_store(root, (NESTED,)).items():
        try:
            check_entry(key, data, exclude=(NESTED,))
        except FileRejected as exc:
            assert (key, exc.code) in {
                ("latin1.md", "invalid_utf8"),
                ("huge.md", "entry_too_large"),
            }
        else:
            sendable.add(key)

    assert sendable == SENDABLE
    for key in set(TREE) - MEMORY_FILES:
        with pytest.raises(FileRejected) as refused:
            check_entry(key, "text\n", exclude=(NESTED,))
        assert refused.value.code == "invalid_key"
        assert TREE[key].value in str(refused.value)


def test_checksums_are_of_the_same_files(tmp_path):
    root = tricky_tree(tmp_path / "store")
    assert set(store_checksums(root, (NESTED,))) == MEMORY_FILES
    os.utime(root / "a.md")  # a memo keyed by stat does not change the set
    assert set(store_checksums(root, (NESTED,))) == MEMORY_FILES
