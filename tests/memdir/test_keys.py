"""Path security rules of docs/design.md §4: memory keys and configured directory overrides."""

from __future__ import annotations

import errno
import os
import pwd
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memapp.memdir import keys
from memapp.memdir.keys import (
    RULES,
    PathTraversalError,
    check_key_name,
    check_new_keys,
    fold_key,
    memory_dir_override_problem,
    normalize_key,
    validate_key,
    validate_memory_dir_override,
)

ATTACKS = [
    # plain syntax
    ("", "empty"),
    ("a\0b.md", "nul-byte"),
    ("\0", "nul-byte"),
    ("team/\0/a.md", "nul-byte"),
    ("/etc/passwd", "absolute"),
    ("/", "absolute"),
    ("/x/team/a.md", "absolute"),
    ("a\\b.md", "backslash"),
    ("..\\..\\etc\\passwd", "backslash"),
    ("team\\..\\a.md", "backslash"),
    # Windows drives and UNC
    ("C:", "drive-or-unc"),
    ("c:foo", "drive-or-unc"),
    ("C:\\Windows\\win.ini", "drive-or-unc"),
    ("z:/etc/passwd", "drive-or-unc"),
    ("\\\\server\\share", "drive-or-unc"),
    ("//server/share", "drive-or-unc"),
    # dot-dot segments, even when they would land inside
    ("..", "dotdot"),
    ("../a.md", "dotdot"),
    ("../../../../etc/passwd", "dotdot"),
    ("team/../a.md", "dotdot"),
    ("team/..", "dotdot"),
    ("team/../../other/a.md", "dotdot"),
    # URL-encoded traversal, single and nested
    ("%2e%2e%2fetc%2fpasswd", "encoded-traversal"),
    ("%2E%2E/a.md", "encoded-traversal"),
    ("..%2fa.md", "encoded-traversal"),
    ("team%2fa.md", "encoded-traversal"),
    ("%252e%252e%252fa.md", "encoded-traversal"),
    ("%25252e%25252e%25252f", "encoded-traversal"),
    ("a%00.md", "encoded-traversal"),
    ("%5c%5cserver", "encoded-traversal"),
    ("%43:x", "encoded-traversal"),
    ("%" + "25" * 20 + "2e", "encoded-traversal"),  # never settles: fail closed
    # NFKC traversal (fullwidth and compatibility characters)
    ("．．／etc", "encoded-traversal"),
    ("team／a.md", "encoded-traversal"),
    ("＼a.md", "encoded-traversal"),
    ("‥/a.md", "encoded-traversal"),
    ("notes…md", "encoded-traversal"),  # NFKC gives "...", which contains ".."
    # both orders of decoding
    ("％２ｅ％２ｅ％２ｆ", "encoded-traversal"),
    ("%EF%BC%8Fa.md", "encoded-traversal"),
    ("%EF%BC%8E%EF%BC%8E", "encoded-traversal"),
    # spellings that alias another key
    ("./a.md", "dot-segment"),
    ("team/./a.md", "dot-segment"),
    (".", "dot-segment"),
    ("team//a.md", "empty-segment"),
    ("team/", "empty-segment"),
    # longer than a file name can be, even where the folder does not exist yet
    ("x" * 253 + ".md", "name-too-long"),
    ("new/" + "é" * 127 + ".md", "name-too-long"),  # 257 bytes in 130 characters
]

# Keys no new file may have, though one already named so can be read and removed (check_key_name).
NAMING_ATTACKS = [
    # what a reader cannot see: shown right to left, "\u202edm.exe.md" reads "dm.exe.md"
    ("\u202edm.exe.md", "invisible-character"),
    ("team/\u2066x\u2069.md", "invisible-character"),
    ("a\u200b.md", "invisible-character"),
    ("\ufeffa.md", "invisible-character"),
    ("a\x1b[31m.md", "invisible-character"),
    ("a\u2028b.md", "invisible-character"),
    # the index's look-alikes: one file with MEMORY.md on macOS and Windows
    ("memory.md", "index-lookalike"),
    ("team/Memory.md", "index-lookalike"),
    ("ＭＥＭＯＲＹ.md", "index-lookalike"),
]

LEGITIMATE = [
    "a.md",
    "MEMORY.md",
    "team/a.md",
    "team/frontend/MEMORY.md",
    "notes/2026/x.md",
    "logs/2026/03/2026-03-05.md",
    "café.md",
    "cafe\u0301.md",  # decomposed: NFKC changes it, but into nothing dangerous
    "日本語/メモ.md",
    "emoji 🎉.md",
    "my notes.md",
    "100%.md",
    "50%25off.md",  # decodes to "50%off.md": harmless
    "v1..2.md",  # ".." inside a name is not a segment
    ".hidden.md",
    "...md",
    "ab:c.md",
    "~/a.md",  # a directory literally called "~" inside the store
    "x" * 252 + ".md",  # 255 bytes: the longest name a file can have
]


def test_it_has_at_least_thirty_attacks_and_a_word_for_each_rule():
    assert len(ATTACKS) >= 30
    for _, rule in ATTACKS:
        assert rule in RULES


@pytest.mark.parametrize(("key", "rule"), ATTACKS)
def test_it_rejects_attack_keys_with_the_rule_broken(tmp_path, key, rule):
    store = tmp_path / "store"
    store.mkdir()
    with pytest.raises(PathTraversalError) as caught:
        validate_key(store, key)
    assert caught.value.rule == rule
    assert caught.value.key == key
    assert isinstance(caught.value, ValueError)
    assert list(tmp_path.iterdir()) == [store]
    assert list(store.iterdir()) == []


@pytest.mark.parametrize("key", LEGITIMATE)
def test_it_accepts_ordinary_keys_and_returns_the_joined_path(tmp_path, key):
    result = validate_key(tmp_path, key)
    assert result == tmp_path / key
    assert result.is_absolute()


def test_it_rejects_keys_that_are_not_text(tmp_path):
    with pytest.raises(PathTraversalError) as caught:
        validate_key(tmp_path, b"a.md")  # type: ignore[arg-type]
    assert caught.value.rule == "not-text"


def test_its_message_names_the_rule_and_quotes_the_key_safely(tmp_path):
    with pytest.raises(PathTraversalError) as caught:
        validate_key(tmp_path, "../\x1b[31mred\n")
    message = str(caught.value)
    assert "'..' segment" in message
    assert "[dotdot]" in message
    assert repr("../\x1b[31mred\n") in message
    assert "\x1b" not in message and "\n" not in message


def test_its_message_shortens_a_huge_key(tmp_path):
    with pytest.raises(PathTraversalError) as caught:
        validate_key(tmp_path, "/" + "a" * 10_000)
    assert len(str(caught.value)) < 400


def test_it_accepts_a_store_root_given_as_text_or_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert validate_key("store", "a.md") == tmp_path / "store" / "a.md"
    assert validate_key(str(tmp_path), "a.md") == tmp_path / "a.md"


def test_it_accepts_keys_in_a_store_that_does_not_exist_yet(tmp_path):
    root = tmp_path / "not" / "yet"
    assert validate_key(root, "team/a.md") == root / "team" / "a.md"
    assert not (tmp_path / "not").exists()


def test_it_refuses_a_path_below_a_regular_file(tmp_path):
    # Not an escape, but no file can be there: the rule says so, where the write would fail.
    (tmp_path / "a.md").write_text("x")
    assert _rule(tmp_path, "a.md/b.md") == "parent-is-file"
    assert _rule(tmp_path, "a.md/deeper/b.md") == "parent-is-file"


def test_the_lexical_root_check_stands_even_without_the_syntax_rules(tmp_path, monkeypatch):
    monkeypatch.setattr(keys, "_check_syntax", lambda key: None)
    assert _rule(tmp_path / "team", "../team-evil/a.md") == "outside-root"
    assert _rule(tmp_path / "team", "..") == "outside-root"


def test_it_keeps_server_paths_out_of_the_message(store):
    (store / "link").symlink_to(store.parent / "outside")
    with pytest.raises(PathTraversalError) as caught:
        validate_key(store, "link/a.md")
    assert str(store.parent) not in str(caught.value)
    assert "outside" in caught.value.detail


def test_the_lexical_check_needs_a_trailing_separator():
    assert keys._is_inside("/x/team/a.md", "/x/team")
    assert not keys._is_inside("/x/team-evil/a.md", "/x/team")
    assert not keys._is_inside("/x/team", "/x/team")
    assert keys._is_inside("/etc", "/")


# --- symlinks, built for real -----------------------------------------------------------------


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "team"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("secret")
    return root


def _rule(root, key):
    with pytest.raises(PathTraversalError) as caught:
        validate_key(root, key)
    return caught.value.rule


def test_it_rejects_a_symlinked_directory_pointing_outside(store):
    (store / "link").symlink_to(store.parent / "outside")
    assert _rule(store, "link/secret.md") == "symlink-escape"
    assert _rule(store, "link/new.md") == "symlink-escape"
    assert _rule(store, "link/deep/new/file.md") == "symlink-escape"
    assert _rule(store, "link") == "symlink-escape"


def test_it_rejects_a_symlinked_file_pointing_outside(store):
    (store / "a.md").symlink_to(store.parent / "outside" / "secret.md")
    assert _rule(store, "a.md") == "symlink-escape"


def test_it_rejects_a_relative_symlink_climbing_out(store):
    (store / "up").symlink_to("../outside")
    assert _rule(store, "up/secret.md") == "symlink-escape"


def test_it_rejects_a_symlink_to_a_sibling_sharing_the_root_name_as_prefix(store):
    evil = store.parent / "team-evil"
    evil.mkdir()
    (store / "x").symlink_to(evil)
    assert _rule(store, "x/a.md") == "symlink-escape"


def test_it_rejects_a_symlink_to_the_root_itself(store):
    (store / "self").symlink_to(store)
    assert _rule(store, "self") == "symlink-escape"
    assert validate_key(store, "self/a.md") == store / "self" / "a.md"


def test_it_fails_closed_on_a_dangling_symlink(store):
    (store / "gone").symlink_to(store / "nothing-here")
    assert _rule(store, "gone") == "dangling-symlink"
    assert _rule(store, "gone/a.md") == "dangling-symlink"


def test_it_fails_closed_on_a_dangling_symlink_pointing_outside(store):
    (store / "gone").symlink_to(store.parent / "outside" / "nothing")
    assert _rule(store, "gone") == "dangling-symlink"


def test_it_fails_closed_on_symlink_loops(store):
    (store / "loop").symlink_to(store / "loop")
    (store / "ping").symlink_to(store / "pong")
    (store / "pong").symlink_to(store / "ping")
    assert _rule(store, "loop") == "symlink-loop"
    assert _rule(store, "loop/a.md") == "symlink-loop"
    assert _rule(store, "ping/a.md") == "symlink-loop"


def test_it_allows_a_symlink_that_stays_inside(store):
    (store / "real").mkdir()
    (store / "real" / "a.md").write_text("x")
    (store / "alias").symlink_to(store / "real")
    (store / "rel").symlink_to("real")
    (store / "b.md").symlink_to("real/a.md")
    assert validate_key(store, "alias/a.md") == store / "alias" / "a.md"
    assert validate_key(store, "rel/new.md") == store / "rel" / "new.md"
    assert validate_key(store, "b.md") == store / "b.md"


def test_it_works_for_a_root_reached_through_a_symlink(tmp_path):
    real_root = tmp_path / "real-store"
    (real_root / "sub").mkdir(parents=True)
    linked_root = tmp_path / "linked-store"
    linked_root.symlink_to(real_root)
    (real_root / "abs").symlink_to(real_root / "sub")
    assert validate_key(linked_root, "a.md") == linked_root / "a.md"
    assert validate_key(linked_root, "abs/a.md") == linked_root / "abs" / "a.md"
    (real_root / "out").symlink_to(tmp_path)
    assert _rule(linked_root, "out/a.md") == "symlink-escape"


def test_it_fails_closed_when_the_root_is_a_dangling_symlink(tmp_path):
    root = tmp_path / "store"
    root.symlink_to(tmp_path / "missing")
    assert _rule(root, "a.md") == "dangling-symlink"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_it_fails_closed_on_an_unreadable_directory(store):
    locked = store / "locked"
    locked.mkdir()
    (locked / "link").symlink_to(store.parent / "outside")
    locked.chmod(0)
    try:
        assert _rule(store, "locked/link/secret.md") == "permission-denied"
    finally:
        locked.chmod(0o700)


def test_it_fails_closed_when_inspecting_a_path_is_denied(store, monkeypatch):
    # Stands in for the test above when running as root, which bypasses permissions.
    real_lstat = os.lstat

    def lstat(path, *args, **kwargs):
        if os.fspath(path).endswith("locked/link"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(keys.os, "lstat", lstat)
    assert _rule(store, "locked/link/secret.md") == "permission-denied"


def test_it_fails_closed_on_a_path_the_file_system_cannot_take(store):
    # Every name is short, but the whole path is over PATH_MAX (4,096 bytes).
    assert _rule(store, "ab/" * 1400 + "x.md") == "unresolvable"


# --- properties ---------------------------------------------------------------------------------

KEY_ALPHABET = st.sampled_from(
    list("ab.-_ /\\%:~") + ["2e", "2f", "5c", "00", "．", "／", "＼", "‥", "…", "é", "\0", "link"]
)


@pytest.fixture(scope="module")
def trap_store(tmp_path_factory):
    base = tmp_path_factory.mktemp("trap")
    root = base / "store"
    (root / "a").mkdir(parents=True)
    (base / "store-evil").mkdir()
    (root / "link").symlink_to(base)
    (root / "a" / "b").symlink_to(base / "store-evil")
    (root / "ok").symlink_to(root / "a")
    (root / "gone").symlink_to(root / "missing")
    (root / "loop").symlink_to(root / "loop")
    return root


def _assert_inside_or_rejected(root: Path, key: str) -> None:
    try:
        result = validate_key(root, key)
    except PathTraversalError as exc:
        assert exc.rule in RULES
        return
    assert str(result).startswith(str(root) + os.sep)
    assert os.path.normpath(result) == str(result)
    assert os.path.realpath(result).startswith(os.path.realpath(root) + os.sep)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.lists(KEY_ALPHABET, max_size=12).map("".join))
def test_any_key_built_from_dangerous_pieces_is_rejected_or_stays_inside(trap_store, key):
    _assert_inside_or_rejected(trap_store, key)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.text(max_size=40))
def test_any_text_key_is_rejected_or_stays_inside(trap_store, key):
    _assert_inside_or_rejected(trap_store, key)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    segments=st.lists(
        st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=10),
        min_size=1,
        max_size=4,
    )
)
def test_any_plain_nested_key_is_accepted(trap_store, segments):
    assume(segments[0] != "b")  # a/b is the trap store's symlink out of it
    key = "/".join(["a", *segments]) + ".md"
    try:
        result = validate_key(trap_store, key)
    except PathTraversalError as exc:
        # Only compatibility characters whose NFKC form holds a traversal token may fail.
        assert exc.rule == "encoded-traversal"
        return
    assert result == trap_store / key


# --- configured directory overrides -------------------------------------------------------------

HOME = {"HOME": "/home/ana"}

OVERRIDES = [
    ("/srv/memory", "/srv/memory"),
    ("/srv/memory/", "/srv/memory"),
    ("/srv//memory/./x/..", "/srv/memory"),
    ("/ab", "/ab"),
    ("~/notes/memory", "/home/ana/notes/memory"),
    ("~/../bob/memory", "/home/bob/memory"),
    ("/srv/cafe\u0301", "/srv/café"),
    ("", None),
    (None, None),
    (42, None),
    ("/srv/a\0b", None),
    ("~", None),
    ("~/", None),
    ("~/.", None),
    ("~/..", None),
    ("~/../..", None),
    ("~/a/../..", None),
    ("~//", None),
    ("~//etc/memory", "/home/ana/etc/memory"),  # joined as the client does, not to "/etc"
    ("~bob/memory", None),
    ("/", None),
    ("/a", None),
    ("/..", None),
    ("/tmp/../..", None),
    ("/home", None),
    ("/home/ana", None),
    ("/home/ana/", None),
    ("/home/ana/x/..", None),
    ("C:", None),
    ("C:\\", None),
    ("c:/", None),
    ("C:\\Users\\ana\\memory", None),
    ("\\\\server\\share\\memory", None),
    ("//server/share/memory", None),
    ("relative/memory", None),
    ("./memory", None),
]


@pytest.mark.parametrize(("raw", "expected"), OVERRIDES)
def test_it_validates_configured_directory_overrides(raw, expected):
    result = validate_memory_dir_override(raw, HOME)
    assert result == (None if expected is None else Path(expected))
    problem = memory_dir_override_problem(raw, HOME)
    assert (problem is None) == (expected is not None)


def test_it_does_not_expand_tilde_for_environment_overrides():
    assert validate_memory_dir_override("~/notes", HOME, expand_tilde=False) is None
    assert memory_dir_override_problem("~/notes", HOME, expand_tilde=False) == (
        "not an absolute path"
    )
    assert validate_memory_dir_override("/srv/m", HOME, expand_tilde=False) == Path("/srv/m")


def test_it_explains_why_an_override_is_refused():
    assert memory_dir_override_problem("~/..", HOME) == (
        "the home directory itself or one of its parents"
    )
    assert memory_dir_override_problem("~", HOME) == "'~' would be the home directory itself"
    assert memory_dir_override_problem("/a", HOME) == "shorter than 3 characters"
    assert memory_dir_override_problem("//s/x", HOME) == "a Windows drive or UNC path"
    assert memory_dir_override_problem("a\0", HOME) == "contains a NUL byte"
    assert memory_dir_override_problem("/srv/memory", HOME) is None


def test_it_expands_tilde_with_the_given_environment_only(monkeypatch):
    monkeypatch.setenv("HOME", "/home/zed")
    assert validate_memory_dir_override("~/m", {"HOME": "/home/ana"}) == Path("/home/ana/m")
    assert validate_memory_dir_override("~/m") == Path("/home/zed/m")
    account_home = pwd.getpwuid(os.getuid()).pw_dir
    assert validate_memory_dir_override("~/m", {}) == Path(account_home) / "m"


def test_it_refuses_a_home_or_parent_written_out_when_home_is_deep():
    env = {"HOME": "/home/ana/work/"}
    assert validate_memory_dir_override("/home/ana", env) is None
    assert validate_memory_dir_override("/home/ana/work", env) is None
    assert validate_memory_dir_override("/home/ana/work2", env) == Path("/home/ana/work2")


# --- look-alikes: keys one file system would take for one file ---------------------------------

NAME = st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=10)
INVISIBLE = st.characters(categories=["Cc", "Cf", "Zl", "Zp"], exclude_characters="\0")


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


SPELLINGS = [
    str.upper,
    str.lower,
    str.swapcase,
    lambda text: unicodedata.normalize("NFD", text),
    lambda text: unicodedata.normalize("NFC", text),
    _fullwidth,
]


@pytest.mark.parametrize(("key", "rule"), NAMING_ATTACKS)
def test_it_refuses_new_keys_a_reader_would_misread_naming_the_rule(tmp_path, key, rule):
    with pytest.raises(PathTraversalError) as caught:
        check_key_name(key)
    assert caught.value.rule == rule
    assert f"[{rule}]" in str(caught.value)
    assert validate_key(tmp_path, key) == tmp_path / key  # an existing one can be removed


@settings(max_examples=200)
@given(before=NAME, mark=INVISIBLE, after=NAME)
def test_any_key_holding_an_invisible_or_bidirectional_character_is_refused(before, mark, after):
    with pytest.raises(PathTraversalError) as caught:
        check_key_name(f"{before}{mark}{after}.md")
    assert caught.value.rule == "invisible-character"


@settings(max_examples=200)
@given(
    name=st.sampled_from(["memory", "Memory", "mEmOrY", "ＭＥＭＯＲＹ", "ｍｅｍｏｒｙ"]),
    folder=NAME,
)
def test_any_spelling_of_the_index_but_its_own_is_refused(name, folder):
    for key in (f"{name}.md", f"{folder}/{name}.md"):
        with pytest.raises(PathTraversalError) as caught:
            check_key_name(key)
        assert caught.value.rule == "index-lookalike"
    check_key_name(f"{folder}/MEMORY.md")


@settings(max_examples=300)
@given(name=NAME, spelling=st.sampled_from(SPELLINGS), folder=st.sampled_from(["", "team/"]))
def test_a_key_spelt_differently_beside_an_existing_one_is_refused(name, spelling, folder):
    existing = f"{folder}{name}.md"
    new = normalize_key(f"{folder}{spelling(name)}.md")
    assume(fold_key(new) == fold_key(existing))
    if new == existing:
        check_new_keys([new], [existing])  # the same file rewritten
        return
    with pytest.raises(PathTraversalError) as caught:
        check_new_keys([new], [existing])
    assert caught.value.rule == "lookalike-duplicate"
    assert caught.value.key == new
    with pytest.raises(PathTraversalError):  # two of them in one write as well
        check_new_keys([existing, new], [])


@settings(max_examples=200)
@given(names=st.lists(NAME, min_size=1, max_size=6, unique_by=fold_key))
def test_keys_that_differ_once_folded_may_stand_together(names):
    keys_ = [normalize_key(f"{name}.md") for name in names]
    check_new_keys(keys_, [])
    check_new_keys(keys_, keys_)  # rewriting every one of them


@settings(max_examples=200)
@given(name=NAME)
def test_normalising_on_the_way_in_makes_nfd_and_nfc_one_key(name):
    decomposed = unicodedata.normalize("NFD", f"{name}.md")
    assert normalize_key(decomposed) == normalize_key(unicodedata.normalize("NFC", decomposed))


@pytest.mark.parametrize(
    ("new", "existing"),
    [("café.md", "cafe\u0301.md"), ("ｍ.md", "m.md"), ("Notes.md", "notes.md")],
)
def test_the_look_alikes_of_the_issue_are_refused(new, existing):
    with pytest.raises(PathTraversalError) as caught:
        check_new_keys([new], [existing])
    assert "[lookalike-duplicate]" in str(caught.value)


def test_a_key_under_another_key_of_the_same_write_is_refused():
    with pytest.raises(PathTraversalError) as caught:
        check_new_keys(["a.md", "a.md/b.md"], [])
    assert caught.value.rule == "parent-is-file"
    check_new_keys(["a/b.md", "a/c.md"], ["a/d.md"])


def test_validate_keys_resolves_each_directory_once_and_still_catches_every_escape(tmp_path):
    """The batch answers what validate_key answers for each key: a symlink among plain files
    of one directory, and a linked directory, are caught though the directory was resolved
    for its neighbours."""
    root, outside = tmp_path / "store", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "x.md").write_text("x")
    (root / "a.md").write_text("a")
    (root / "sub" / "b.md").write_text("b")
    (root / "escape.md").symlink_to(outside / "x.md")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "inside.md").symlink_to(root / "a.md")
    wanted = ["a.md", "new.md", "escape.md", "sub/b.md", "linked/c.md", "inside.md", "a.md/x.md"]
    found = keys.validate_keys(root, wanted)
    for key in wanted:
        try:
            expected: object = keys.validate_key(root, key)
        except keys.PathTraversalError as exc:
            expected = exc.rule
        got = found[key]
        assert (got.rule if isinstance(got, keys.PathTraversalError) else got) == expected, key
    assert found["escape.md"].rule == found["linked/c.md"].rule == "symlink-escape"
    assert found["a.md/x.md"].rule == "parent-is-file"
    assert found["new.md"] == root / "new.md"
