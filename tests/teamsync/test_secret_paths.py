"""One secret gate on every path into a team store and out to the shared repository (issue 23,
docs/design.md §10a): the shapes no token format names (secret-named keys given a value,
credentials on command lines, a MEMORY.md line below the first) are kept back from "Share with
the team", a zip import (its index lines included), the team protocol's PUT and team sync, and
the shared repository's whole history (`git log -p` and every object) never holds one.

Real git: a bare remote, memhub's clone, do_sync_team().
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from memapp.memdir.store_files import FileRejected
from memapp.stores.actions import do_import_files, do_share_memories
from memapp.stores.projects import resolve_store
from memapp.stores.transfer import read_import
from teamsync.models import BlockedFile
from teamsync.service import do_sync_team
from tests.api.conftest import api_client
from tests.teamsync.gitutil import history, memory, tip_files
from tests.teamsync.test_service import every_object

pytestmark = pytest.mark.django_db

FOLDER = "acme/app"
PROTOCOL = "/api/claude_code/team_memory?repo=acme%2Fapp"

# (how it stands in a memory, the value that must never reach the remote), per path, so each
# path is shown to keep back its own values (a value refused once is never retried elsewhere).
_SHAPES = [
    ("AWS_SECRET_ACCESS_KEY={v} aws s3 ls", "Zq3mK8pL2vN7xR4tW9yB1cF6hJ0sD5gA8eU3iO7{n}"),
    ("DB_PASSWORD={v}", "Sup3rSecretPa55x{n}"),
    ("docker login -u deploy -p {v} registry.example.com", "dckr_pat_Qm7Lx2Vt9Pz4Rn8K{n}"),
    ("curl -u deploy:{v} https://ci.example.com/api", "Hx7pq2Lm9w{n}"),
    ("export AWS_ACCESS_KEY_ID={v}", "AKIAIOSFODNN{n}EXAMPLE"),
    ("mysql -u root -p{v} shop", "S3cr3t!xy{n}"),
]


def shapes(n: int) -> list[tuple[str, str]]:
    return [(line.format(v=value.format(n=n)), value.format(n=n)) for line, value in _SHAPES]


def index_line(key: str, hook: str) -> str:
    return f"- [{key.removesuffix('.md')}]({key}) — {hook}"


def write_on_disk(store, files: dict[str, str], lines: list[str]) -> None:
    """As an agent writes: files and MEMORY.md, behind memhub's back."""
    root = Path(store.path)
    for key, text in files.items():
        (root / key).write_text(text, encoding="utf-8")
    (root / "MEMORY.md").write_text("# Memory\n" + "".join(f"{ln}\n" for ln in lines))


def make_zip(entries: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    buffer.seek(0)
    return buffer


@pytest.fixture
def private(alice, team_store):
    store = resolve_store(alice, FOLDER, "private")
    Path(store.path).mkdir(parents=True, exist_ok=True)
    return store


def test_no_planted_value_reaches_the_remote_by_share_import_put_or_sync(
    team_store, private, alice, remote
):
    planted: list[str] = []

    # "Share with the team": a memory holding a shape, and a clean memory whose private index
    # line holds one (below the first line), are each refused whole.
    shared = shapes(1)
    files = {
        f"share_{i}.md": memory(f"Share {i}", f"{line}\n") for i, (line, _) in enumerate(shared)
    }
    files["share_clean.md"] = memory("Share clean", "Nothing secret.\n")
    write_on_disk(
        private,
        files,
        [index_line(key, "a note") for key in files if key != "share_clean.md"]
        + [index_line("share_clean.md", f"password: Xk9mQ2vL7pTzQq{1}")],
    )
    planted += [value for _, value in shared] + ["Xk9mQ2vL7pTzQq1"]
    for key in files:
        with pytest.raises(FileRejected, match="secret") as refused:
            do_share_memories(private, alice, [key])
        assert refused.value.code == "secret_detected"
    assert do_share_memories(private, alice, []) == {}

    # A zip import: files holding a shape are skipped; a clean file whose index line holds one
    # is imported with a line made from its own header.
    imported = shapes(2)
    entries = {
        f"zip_{i}.md": memory(f"Zip {i}", f"{line}\n") for i, (line, _) in enumerate(imported)
    }
    entries["zip_clean.md"] = memory("Zip clean", "Imported as it is.\n")
    entries["MEMORY.md"] = "# Memory\n- [Zip 0](zip_0.md) — first\n" + "".join(
        f"{index_line('zip_clean.md', line)}\n" for line, _ in shapes(3)[:1]
    )
    planted += [value for _, value in imported] + [shapes(3)[0][1]]
    plan = read_import(team_store, make_zip(entries))
    assert set(plan.files) == {"zip_clean.md"}
    assert plan.index == {}
    skipped = dict(plan.skipped)
    assert all("secret" in skipped[f"zip_{i}.md"] for i in range(len(imported)))
    assert "secret" in skipped["MEMORY.md (zip_clean.md)"]
    do_import_files(team_store, alice, plan.files, plan.index, replace=False)
    index = (Path(team_store.path) / "MEMORY.md").read_text()
    assert "[Zip clean](zip_clean.md) — Zip clean in one line" in index

    # The team protocol's PUT: each shape as an entry, and as a MEMORY.md line below the first.
    api = api_client(alice)
    for i, (line, value) in enumerate(shapes(4)):
        for entries in (
            {f"put_{i}.md": memory(f"Put {i}", f"{line}\n")},
            {"MEMORY.md": f"# Memory\n- [x](x.md) — {line}\n", "x.md": memory("x", "x\n")},
        ):
            response = api.put(PROTOCOL, {"entries": entries}, format="json")
            assert response.status_code == 422, line
            assert response.json()["error"]["code"] == "team_memory_secret_detected"
            assert value not in response.content.decode()
        planted.append(value)

    # Team sync: what an agent wrote into the team store on disk is kept back.
    synced = shapes(5)
    for i, (line, _) in enumerate(synced):
        (Path(team_store.path) / f"disk_{i}.md").write_text(memory(f"Disk {i}", f"{line}\n"))
    planted += [value for _, value in synced]

    report = do_sync_team()
    assert report.pushed
    assert set(tip_files(remote, FOLDER)) == {"MEMORY.md", "zip_clean.md"}
    blocked = set(BlockedFile.objects.filter(store=team_store).values_list("key", flat=True))
    assert blocked == {f"disk_{i}.md" for i in range(len(synced))}
    everything = history(remote) + every_object(remote)
    assert "Imported as it is." in everything  # the search below looks where content lands
    assert [value for value in planted if value in everything] == []


# Shapes a person or an agent writes that no provider's token format and no `KEY=value` names:
# memhub's own API token, an HTTP Authorization header, a password in a URL with no user, a
# .netrc block, a Markdown table row; and tokens a zero-width space, a no-break space or
# full-width letters hide (the value must never reach the remote).
_WRITTEN = [
    ("Our memhub token for CI is {v}, scope team_write.",
     "mh_Qm7Lx2Vt9Pz4Rn8KwJ3bH6sYc1Fd5Ge0Ta8Uo2IkWe{n}"),
    ("curl -H 'Authorization: Bearer {v}' https://api.internal.example/v1/health",
     "9f8e7d6c5b4a39281706f5e4d3c2b1a{n}"),
    ("curl -H 'Authorization: Basic {v}' https://ci.example.com",
     "ZGVwbG95OlRxOHZSMm1LOXpMcFh3N{n}=="),
    ('headers = {{"Authorization": "Token {v}"}}', "Lm4Qx8Rt2Vz6Kp0Wn3Ys{n}"),
    ("REDIS_URL=redis://:{v}@cache.internal:6379/0", "Hk3nP9xQ2vL7mR4t{n}"),
    ("| key | value |\n|---|---|\n| DB_PASSWORD | `{v}` |", "Vb6nT3qW8zKx2Lm{n}"),
    ("```\nmachine api.example.com\n  login deploy\n  password {v}\n```", "Tq8vR2mK9zLpXw4{n}"),
    # Hidden from the rules by what renders as nothing or as ASCII (copied from a chat).
    ("The deploy token is {v}, from the wiki.", "ghp_A1b2C3d4\u200bE5f6G7h8I9j0K1l2M3n4O5p6Q7r{n}"),
    ("export DB_PASSWORD=\u00a0{v}", "Zx9vB4nM7qL2kR8{n}"),
    ("トークン：{v}", "".join(chr(ord(c) + 0xFEE0) for c in "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3hG")),  # noqa: E501
]  # fmt: skip


def test_written_shapes_never_reach_the_remote(team_store, remote):
    values = []
    for i, (line, value) in enumerate(_WRITTEN):
        value = value.format(n=i)
        values.append(value)
        body = f"How we reach it:\n\n{line.format(v=value)}\n"
        (Path(team_store.path) / f"written_{i}.md").write_text(memory(f"Written {i}", body))
    (Path(team_store.path) / "clean.md").write_text(memory("Clean", "Nothing secret.\n"))

    report = do_sync_team()

    assert report.pushed
    assert set(tip_files(remote, FOLDER)) == {"clean.md"}
    blocked = set(BlockedFile.objects.filter(store=team_store).values_list("key", flat=True))
    assert blocked == {f"written_{i}.md" for i in range(len(_WRITTEN))}
    everything = history(remote) + every_object(remote)
    assert "Nothing secret." in everything
    assert [value for value in values if value in everything] == []
