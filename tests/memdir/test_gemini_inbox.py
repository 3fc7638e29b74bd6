"""Reading Gemini CLI's `/memory inbox` patches (docs/design.md §28): the subset of unified
diff Gemini CLI 0.61 writes, applied exactly or refused with a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memapp.memdir.gemini_inbox import (
    MAX_PATCH_BYTES,
    PatchError,
    apply_hunks,
    parse_patch,
    patched_files,
    read_patch,
)

MEM = "/home/alice/.gemini/tmp/app/memory"
NOTES = (
    "# Project Memory\n- Use uv for installs.\n- CI runs on every push.\n- Deploys are manual.\n"
)
UPDATE = f"""--- {MEM}/MEMORY.md
+++ {MEM}/MEMORY.md
@@ -2,3 +2,4 @@
 - Use uv for installs.
 - CI runs on every push.
 - Deploys are manual.
+- See {MEM}/release.md for release notes.
"""
CREATE = f"""--- /dev/null
+++ {MEM}/release.md
@@ -0,0 +1,2 @@
+# Release
+Tag from main only.
\\ No newline at end of file
"""


def test_an_update_and_a_new_file_apply_as_gemini_writes_them(tmp_path):
    patches = parse_patch(UPDATE + CREATE)
    assert [(p.target, p.is_new) for p in patches] == [
        (f"{MEM}/MEMORY.md", False),
        (f"{MEM}/release.md", True),
    ]
    files = patched_files(
        patches,
        Path(MEM),
        {"MEMORY.md": NOTES.encode()}.get,
    )
    assert files["MEMORY.md"] == (
        NOTES.encode(),
        NOTES + f"- See {MEM}/release.md for release notes.\n",
    )
    assert files["release.md"] == (None, "# Release\nTag from main only.")


def test_a_hunk_is_placed_where_its_lines_are_when_lines_moved():
    moved = "# Project Memory\n- first\n" + NOTES.split("\n", 1)[1]
    assert apply_hunks(moved, parse_patch(UPDATE)[0]).endswith("release notes.\n")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("just some words\n", "not a unified diff"),
        (f"--- {MEM}/MEMORY.md\n", "without its '+++ ' line"),
        (f"--- {MEM}/MEMORY.md\n+++ {MEM}/MEMORY.md\n", "no hunks"),
        (UPDATE.replace("+2,4", "+2,5"), "says 3 old and 5 new lines"),
        (UPDATE.replace(f"--- {MEM}/MEMORY.md", f"--- {MEM}/other.md"), "different files"),
        (f"--- {MEM}/a.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", "a deletion"),
        (UPDATE.replace("@@ -2,3 +2,4 @@", "@@ two @@"), "not a hunk header"),
    ],
)
def test_malformed_patches_are_refused_with_a_reason(text, reason):
    with pytest.raises(PatchError, match=re.escape(reason)):
        parse_patch(text)


def test_a_patch_that_does_not_fit_the_file_is_refused():
    with pytest.raises(PatchError, match="hunk 1 does not apply"):
        apply_hunks(NOTES.replace("manual", "automatic"), parse_patch(UPDATE)[0])


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("/home/alice/.gemini/GEMINI.md", "outside this store"),
        (f"{MEM}/../../other/memory/x.md", "outside this store"),
        ("notes.md", "not an absolute path"),
        (f"{MEM}/skills/deploy/SKILL.md", "not a memory file"),
        (f"{MEM}/.inbox/private/x.md", "x.md"),
    ],
)
def test_targets_outside_the_store_or_against_the_key_rules_are_refused(target, reason):
    patch = parse_patch(f"--- /dev/null\n+++ {target}\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(PatchError, match=re.escape(reason)):
        patched_files(patch, Path(MEM), lambda key: None, ("skills",))


def test_a_new_file_that_exists_or_an_update_of_a_missing_one_is_refused():
    create = parse_patch(CREATE)
    with pytest.raises(PatchError, match="it exists"):
        patched_files(create, Path(MEM), lambda key: b"x")
    with pytest.raises(PatchError, match="does not exist"):
        patched_files(parse_patch(UPDATE), Path(MEM), lambda key: None)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"--- /dev/null\n\0\n", "binary"),
        (b"--- /dev/null\n\xff\xfe\n", "not UTF-8"),
        (b"x" * (MAX_PATCH_BYTES + 1), "too large"),
    ],
)
def test_binary_huge_or_undecodable_files_are_refused_with_their_hash(tmp_path, data, reason):
    path = tmp_path / "extraction.patch"
    path.write_bytes(data)
    with pytest.raises(PatchError, match=reason) as caught:
        read_patch(path)
    assert caught.value.sha256.startswith("sha256:")
