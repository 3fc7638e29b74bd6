"""Where memory directories are (docs/design.md §3, §13), checked against real git repositories."""

from __future__ import annotations

import ctypes
import json
import os
import pwd
import subprocess
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memapp.memdir import paths
from memapp.memdir.paths import (
    agent_memory_dir,
    auto_memory_enabled,
    canonical_git_root,
    config_home,
    git_config_values,
    js_string_hash,
    load_user_settings,
    long_name_prefix,
    memory_base,
    memory_dir_for,
    original_path,
    parse_repo_slug,
    repo_slug_for,
    sanitize_path,
)


@pytest.fixture(autouse=True)
def no_managed_settings(tmp_path, monkeypatch):
    """Keep the machine's policy settings, if any, out of the tests."""
    monkeypatch.setattr(paths, "MANAGED_SETTINGS_PATH", tmp_path / "no-managed-settings.json")


def git(cwd, *args):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Ana",
        "GIT_AUTHOR_EMAIL": "ana@example.com",
        "GIT_COMMITTER_NAME": "Ana",
        "GIT_COMMITTER_EMAIL": "ana@example.com",
    }
    result = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """Ana's app: a real repository with one commit and an origin."""
    root = tmp_path / "ana" / "app"
    root.mkdir(parents=True)
    git(root, "init", "-q")
    git(root, "remote", "add", "origin", "git@github.com:Ana/My-App.git")
    git(root, "commit", "-q", "--allow-empty", "-m", "first")
    (root / "src" / "deep").mkdir(parents=True)
    return root


@pytest.fixture
def worktree(repo, tmp_path):
    tree = tmp_path / "elsewhere" / "app-feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    return tree


# --- homes and bases ----------------------------------------------------------------------------


def test_config_home_defaults_to_dot_claude_in_home():
    assert config_home({"HOME": "/home/ana"}) == Path("/home/ana/.claude")


def test_config_home_follows_claude_config_dir():
    env = {"HOME": "/home/ana", "CLAUDE_CONFIG_DIR": "/etc/claude-ana"}
    assert config_home(env) == Path("/etc/claude-ana")


def test_config_home_treats_an_empty_variable_as_unset():
    assert config_home({"HOME": "/home/ana", "CLAUDE_CONFIG_DIR": ""}) == Path("/home/ana/.claude")


def test_config_home_uses_the_given_environment_only(monkeypatch):
    monkeypatch.setenv("HOME", "/home/zed")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/zed/config")
    assert config_home() == Path("/zed/config")
    account_home = pwd.getpwuid(os.getuid()).pw_dir
    assert config_home({}) == Path(account_home) / ".claude"


def test_memory_base_defaults_to_the_config_home():
    env = {"HOME": "/home/ana", "CLAUDE_CONFIG_DIR": "/cfg"}
    assert memory_base(env) == Path("/cfg")
    assert memory_base({"HOME": "/home/ana"}) == Path("/home/ana/.claude")


def test_memory_base_follows_the_remote_memory_dir():
    env = {"HOME": "/home/ana", "CLAUDE_CONFIG_DIR": "/cfg", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/m"}
    assert memory_base(env) == Path("/m")
    env["CLAUDE_CODE_REMOTE_MEMORY_DIR"] = ""
    assert memory_base(env) == Path("/cfg")


# --- sanitizing ---------------------------------------------------------------------------------


def oracle_sanitize(path: str) -> str:
    """An independent transcription of the client's JavaScript, via UTF-16 bytes and ctypes."""
    data = path.encode("utf-16-le", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    sanitized = "".join(
        chr(u) if chr(u).isascii() and chr(u).isalnum() and u < 128 else "-" for u in units
    )
    if len(sanitized) <= 200:
        return sanitized
    h = 0
    for u in units:
        h = ctypes.c_int32((h << 5) - h + u).value
    n = abs(h)
    digits = []
    while True:
        n, r = divmod(n, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[r])
        if not n:
            break
    return f"{sanitized[:200]}-{''.join(reversed(digits))}"


# Expected values computed with the client's functions run in Node.js.
SANITIZED = [
    ("/home/ana/my-app", "-home-ana-my-app"),
    ("/tmp/café", "-tmp-caf-"),
    ("/a/😀", "-a---"),
    ("C:\\Users\\x", "C--Users-x"),
    ("", ""),
    ("/home/ana/" + "a" * 190, "-home-ana-" + "a" * 190),
    ("/home/ana/" + "a" * 191, "-home-ana-" + "a" * 190 + "-p2sd6j"),
    ("/home/ana/projects/" + "x" * 250, "-home-ana-projects-" + "x" * 181 + "-ed2e13"),
    ("/srv/😀" * 40, ("-srv---" * 40)[:200] + "-1m7egw"),
    ("/home/" + "é" * 300, "-home-" + "-" * 194 + "-efl2sf"),
    ("/" + "z" * 500 + "/ünïcode/😀/end", "-" + "z" * 199 + "-f674ks"),
    # 103 characters in Python, but 203 UTF-16 code units: hashed
    ("/p/" + "😀" * 100, "-p-" + "-" * 197 + "-4tq0ka"),
    ("/p/" + "😀" * 98 + "a", "-p-" + "-" * 196 + "a"),
    # a lone surrogate, as from a surrogateescape file name, is one code unit
    ("/x/\udcff" + "a" * 200, "-x--" + "a" * 196 + "-u97z15"),
]

HASHES = [
    ("/home/ana/my-app", -545006020),
    ("/tmp/café", -1836875448),
    ("/a/😀", 48113280),
    ("", 0),
    ("/home/ana/" + "a" * 191, -1516337083),
    ("/srv/😀" * 40, 97763072),
    ("/p/" + "😀" * 100, 291787354),
]


@pytest.mark.parametrize(("path", "expected"), SANITIZED)
def test_it_sanitizes_paths_like_the_client(path, expected):
    assert sanitize_path(path) == expected
    assert oracle_sanitize(path) == expected


@pytest.mark.parametrize(("text", "expected"), HASHES)
def test_it_hashes_like_the_client(text, expected):
    assert js_string_hash(text) == expected


def test_it_takes_abs_of_the_most_negative_hash():
    # Built so the hash is exactly -2**31 (checked in Node.js); JavaScript's Math.abs gives
    # 2**31, which must not wrap back to a negative number.
    path = "/" + "m" * 210 + "/\u0ff3H]VN"
    assert js_string_hash(path) == -(2**31)
    assert sanitize_path(path) == "-" + "m" * 199 + "-zik0zk"
    assert paths._base36(0) == "0"
    assert paths._base36(35) == "z"
    assert paths._base36(36) == "10"


@given(st.text(max_size=260))
def test_sanitizing_agrees_with_the_oracle(path):
    assert sanitize_path(path) == oracle_sanitize(path)


@given(st.text(min_size=0, max_size=300))
def test_sanitized_names_are_safe_single_segments(path):
    name = sanitize_path(path)
    assert all(c.isascii() and (c.isalnum() or c == "-") for c in name)
    assert len(name) <= 200 + 1 + 7


def test_it_gives_the_prefix_shared_by_all_client_builds():
    long_path = "/home/ana/" + "a" * 191
    assert long_name_prefix(long_path) == "-home-ana-" + "a" * 190 + "-"
    assert sanitize_path(long_path).startswith(long_name_prefix(long_path))
    assert long_name_prefix("/home/ana/app") is None


# --- canonical git root -------------------------------------------------------------------------


def test_it_finds_no_git_root_outside_a_repository(tmp_path):
    assert canonical_git_root(tmp_path) is None


def test_it_finds_the_root_from_the_root_and_from_below(repo):
    assert canonical_git_root(repo) == repo
    assert canonical_git_root(repo / "src" / "deep") == repo
    assert canonical_git_root(str(repo / "src")) == repo


def test_it_finds_the_root_from_a_path_that_does_not_exist_yet(repo):
    assert canonical_git_root(repo / "src" / "not-yet" / "x.py") == repo


def test_worktrees_resolve_to_the_main_repository(repo, worktree):
    (worktree / "lib").mkdir()
    assert canonical_git_root(worktree) == repo
    assert canonical_git_root(worktree / "lib") == repo


def test_worktrees_of_a_bare_repository_resolve_to_the_bare_repository(tmp_path, repo):
    bare = tmp_path / "app.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    tree = tmp_path / "bare-tree"
    git(bare, "worktree", "add", "-q", str(tree), "main")
    assert canonical_git_root(tree) == bare


def test_a_submodule_keeps_its_own_root(tmp_path, repo):
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    git(lib, "commit", "-q", "--allow-empty", "-m", "lib")
    git(repo, "submodule", "add", "-q", str(lib), "vendor/lib")
    assert (repo / "vendor" / "lib" / ".git").is_file()
    assert canonical_git_root(repo / "vendor" / "lib") == repo / "vendor" / "lib"


def test_a_forged_git_file_cannot_borrow_another_repositorys_worktree(tmp_path, repo, worktree):
    # Mallory's download claims to be Ana's worktree: the back-link does not point to it.
    evil = tmp_path / "mallory"
    evil.mkdir()
    gitdir = repo / ".git" / "worktrees" / worktree.name
    (evil / ".git").write_text(f"gitdir: {gitdir}\n")
    assert canonical_git_root(evil) == evil


def test_a_forged_commondir_cannot_redirect_the_root(tmp_path, repo):
    evil = tmp_path / "mallory"
    fake = evil / ".fake-gitdir"
    fake.mkdir(parents=True)
    (fake / "commondir").write_text(str(repo / ".git"))
    (fake / "gitdir").write_text(str(evil / ".git"))
    (evil / ".git").write_text("gitdir: .fake-gitdir\n")
    assert canonical_git_root(evil) == evil


def test_a_broken_git_file_keeps_its_own_root(tmp_path):
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / ".git").write_text("not a gitdir line")
    assert canonical_git_root(odd) == odd
    (odd / ".git").write_text("gitdir: /nonexistent/worktrees/x")
    assert canonical_git_root(odd) == odd


def test_the_root_is_nfc_normalised_like_the_clients(tmp_path):
    decomposed = tmp_path / "cafe\u0301"
    decomposed.mkdir()
    git(decomposed, "init", "-q")
    root = canonical_git_root(decomposed)
    assert str(root) == unicodedata.normalize("NFC", str(decomposed))


# --- repo slugs ---------------------------------------------------------------------------------

SLUGS = [
    ("git@github.com:Ana/My-App.git", "Ana/My-App"),
    ("git@github.com:ana/app", "ana/app"),
    ("  git@gitlab.example.org:team/repo.git\n", "team/repo"),
    ("https://github.com/Ana/app.git", "Ana/app"),
    ("https://github.com/Ana/app", "Ana/app"),
    ("http://git.corp.example.com/team/app.git", "team/app"),
    ("https://ana:token@github.com/Ana/app.git", "Ana/app"),
    ("https://github.com:443/Ana/app.git", "Ana/app"),
    ("ssh://git@github.com/Ana/app.git", "Ana/app"),
    ("ssh://git@ghe.corp.com:2222/Ana/app.git", "Ana/app"),
    ("git://github.com/Ana/app.git", "Ana/app"),
    ("https://github.com/Ana/app.git.git", "Ana/app.git"),
    ("git@localhost:ana/app.git", None),
    ("https://localhost/ana/app.git", None),
    ("https://host.123/ana/app", None),
    ("https://10.0.0.1/ana/app", None),
    ("git@192.168.1.2:ana/app.git", None),
    ("https://github.com/group/sub/app.git", None),
    ("https://github.com/app.git", None),
    ("https://github.com/Ana/app/", None),
    ("git@github.com:group/sub/app.git", None),
    ("ftp://github.com/Ana/app.git", None),
    ("file:///srv/git/app.git", None),
    ("/srv/git/app.git", None),
    ("../app.git", None),
    ("github.com/Ana/app", None),
    ("", None),
    ("https://github.com/Ana/app.git\nx", None),
]


@pytest.mark.parametrize(("url", "slug"), SLUGS)
def test_it_parses_repo_slugs_from_remote_urls(url, slug):
    assert parse_repo_slug(url) == slug


def test_it_reads_the_slug_of_a_repository(repo):
    assert repo_slug_for(repo) == "Ana/My-App"
    assert repo_slug_for(repo / "src" / "deep") == "Ana/My-App"


def test_it_reads_the_slug_from_a_worktree(repo, worktree):
    assert repo_slug_for(worktree) == "Ana/My-App"


def test_it_has_no_slug_outside_a_repository_or_without_origin(tmp_path):
    assert repo_slug_for(tmp_path) is None
    bare_repo = tmp_path / "plain"
    bare_repo.mkdir()
    git(bare_repo, "init", "-q")
    assert repo_slug_for(bare_repo) is None
    git(bare_repo, "remote", "add", "upstream", "git@github.com:other/repo.git")
    assert repo_slug_for(bare_repo) is None
    git(bare_repo, "remote", "add", "origin", "git@localhost:ana/app.git")
    assert repo_slug_for(bare_repo) is None


def test_the_last_origin_url_wins_as_with_git_config_get(repo):
    git(repo, "config", "--add", "remote.origin.url", "https://gitlab.com/Bob/Other.git")
    assert git(repo, "config", "--get", "remote.origin.url").endswith("Bob/Other.git")
    assert repo_slug_for(repo) == "Bob/Other"


TRICKY_CONFIG = r"""
# a comment
[core]
	bare = false
[remote "upstream"]
	url = git@github.com:up/stream.git
[REMOTE "origin"]  ; section names are case-insensitive
	fetch = +refs/heads/*:refs/remotes/origin/*
	URL = "https://github.com/Ana/quoted.git" # trailing comment
[remote "Origin"]
	url = git@github.com:wrong/case.git
[remote.origin]
	url = git@github.com:legacy/form.git
[remote "origin"] url = https://github.com/Ana/\
continued.git
[remote "origin"]
	pushurl = git@github.com:push/only.git
	url = "git@github.com:Ana/semi;colon.git" ; comment
"""


def test_it_reads_git_config_as_git_does(tmp_path):
    config = tmp_path / "config"
    config.write_text(TRICKY_CONFIG)
    ours = git_config_values(TRICKY_CONFIG, "remote", "origin", "url")
    theirs = git(tmp_path, "config", "-f", str(config), "--get-all", "remote.origin.url")
    assert ours == theirs.splitlines()
    assert ours[-1] == "git@github.com:Ana/semi;colon.git"
    assert git_config_values(TRICKY_CONFIG, "core", None, "bare") == ["false"]


def test_it_tolerates_an_unreadable_git_config(tmp_path):
    odd = tmp_path / "odd"
    (odd / ".git").mkdir(parents=True)
    assert repo_slug_for(odd) is None
    (odd / ".git" / "config").write_bytes(b'[remote "origin"]\n\turl = \xff\xfe\n')
    assert repo_slug_for(odd) is None


# --- settings -----------------------------------------------------------------------------------


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_it_loads_user_settings_from_the_config_home(tmp_path):
    env = {"HOME": str(tmp_path)}
    write_json(tmp_path / ".claude" / "settings.json", {"autoMemoryEnabled": False})
    assert load_user_settings(env) == {"autoMemoryEnabled": False}


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", '"text"', "\udcff"])
def test_it_tolerates_malformed_user_settings(tmp_path, content):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path)}
    (tmp_path / "settings.json").write_text(content, errors="surrogateescape")
    assert load_user_settings(env) == {}


def test_it_tolerates_missing_user_settings(tmp_path):
    assert load_user_settings({"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}) == {}


def test_policy_settings_outrank_user_settings(tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path)}
    write_json(tmp_path / "settings.json", {"autoMemoryDirectory": "/srv/a", "model": "x"})
    managed = tmp_path / "managed-settings.json"
    write_json(managed, {"autoMemoryDirectory": "/srv/policy"})
    assert load_user_settings(env, managed_settings=managed) == {
        "autoMemoryDirectory": "/srv/policy",
        "model": "x",
    }


# --- the memory dir -----------------------------------------------------------------------------


@pytest.fixture
def ana_env(tmp_path):
    home = tmp_path / "home" / "ana"
    home.mkdir(parents=True)
    return {"HOME": str(home)}


def test_the_memory_dir_of_a_plain_directory_is_named_after_it(tmp_path, ana_env):
    project = tmp_path / "scratch"
    project.mkdir()
    expected = Path(ana_env["HOME"]) / ".claude" / "projects" / sanitize_path(str(project))
    assert memory_dir_for(project, ana_env, {}) == expected / "memory"


def test_the_memory_dir_of_a_repository_is_named_after_its_root(repo, ana_env):
    base = Path(ana_env["HOME"]) / ".claude" / "projects"
    expected = base / sanitize_path(str(repo)) / "memory"
    assert memory_dir_for(repo / "src" / "deep", ana_env, {}) == expected


def test_all_worktrees_share_one_memory_dir(repo, worktree, ana_env):
    assert memory_dir_for(worktree, ana_env, {}) == memory_dir_for(repo, ana_env, {})


def test_the_memory_dir_follows_the_memory_base(tmp_path, ana_env):
    env = {**ana_env, "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/remote"}
    project = tmp_path / "p"
    assert (
        memory_dir_for(project, env, {})
        == Path("/remote/projects") / sanitize_path(str(project)) / "memory"
    )


def test_a_relative_project_path_is_taken_from_the_working_directory(
    tmp_path, ana_env, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert memory_dir_for("p", ana_env, {}) == memory_dir_for(tmp_path / "p", ana_env, {})


def test_the_cowork_override_wins(tmp_path, ana_env):
    env = {**ana_env, "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "/srv/cowork/memory/"}
    settings = {"autoMemoryDirectory": "/srv/settings"}
    assert memory_dir_for(tmp_path, env, settings) == Path("/srv/cowork/memory")


@pytest.mark.parametrize("bad", ["relative", "~/cowork", "/", "//server/x", ""])
def test_an_invalid_cowork_override_falls_through(tmp_path, ana_env, bad):
    env = {**ana_env, "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": bad}
    settings = {"autoMemoryDirectory": "/srv/settings"}
    assert memory_dir_for(tmp_path, env, settings) == Path("/srv/settings")


def test_the_auto_memory_directory_setting_expands_tilde(tmp_path, ana_env):
    settings = {"autoMemoryDirectory": "~/notes/memory"}
    expected = Path(ana_env["HOME"]) / "notes" / "memory"
    assert memory_dir_for(tmp_path, ana_env, settings) == expected


@pytest.mark.parametrize("bad", ["~", "~/..", "~/.", "relative", "C:\\x", 7, None, ["/srv/x"]])
def test_an_invalid_auto_memory_directory_falls_through(tmp_path, ana_env, bad):
    default = memory_dir_for(tmp_path, ana_env, {})
    assert memory_dir_for(tmp_path, ana_env, {"autoMemoryDirectory": bad}) == default


def test_it_loads_user_settings_when_none_are_given(tmp_path, ana_env):
    write_json(
        Path(ana_env["HOME"]) / ".claude" / "settings.json", {"autoMemoryDirectory": "/srv/m"}
    )
    assert memory_dir_for(tmp_path, ana_env) == Path("/srv/m")


def test_a_repository_cannot_redirect_memory_to_ssh(repo, ana_env):
    # Mallory's repository ships settings aiming memory writes at ~/.ssh: committed, they are
    # the repository's, never the person's.
    for name in ("settings.json", "settings.local.json"):
        write_json(repo / ".claude" / name, {"autoMemoryDirectory": "~/.ssh"})
    git(repo, "add", "-f", ".claude")
    git(repo, "commit", "-q", "-m", "settings")
    home = Path(ana_env["HOME"])
    result = memory_dir_for(repo, ana_env)
    assert result == home / ".claude" / "projects" / sanitize_path(str(repo)) / "memory"
    assert ".ssh" not in str(result)
    assert load_user_settings(ana_env, project_dir=repo) == {}


def test_a_downloaded_folder_cannot_redirect_memory_either(tmp_path, ana_env):
    folder = tmp_path / "download"
    write_json(folder / ".claude" / "settings.local.json", {"autoMemoryDirectory": "~/.ssh"})
    assert ".ssh" not in str(memory_dir_for(folder, ana_env))
    assert load_user_settings(ana_env, project_dir=folder) == {}


def test_the_checkouts_own_local_settings_are_read(repo, ana_env):
    # `.claude/settings.local.json` is the person's file (git ignores it): it is read, from
    # anywhere in the checkout, after the user settings and before the policy.
    write_json(Path(ana_env["HOME"]) / ".claude" / "settings.json", {"autoMemoryEnabled": True})
    write_json(repo / ".claude" / "settings.local.json", {"autoMemoryDirectory": "~/notes"})
    managed = repo.parent / "managed.json"
    write_json(managed, {"autoMemoryEnabled": False})
    assert memory_dir_for(repo / "src", ana_env) == Path(ana_env["HOME"]) / "notes"
    assert load_user_settings(ana_env, project_dir=repo / "src", managed_settings=managed) == {
        "autoMemoryEnabled": False,
        "autoMemoryDirectory": "~/notes",
    }
    assert load_user_settings(ana_env) == {"autoMemoryEnabled": True}  # no checkout given


def test_local_settings_reached_through_a_symlink_are_not_read(repo, ana_env, tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    write_json(elsewhere, {"autoMemoryDirectory": "~/notes"})
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.local.json").symlink_to(elsewhere)
    assert load_user_settings(ana_env, project_dir=repo) == {}


def test_local_settings_in_a_worktree_are_that_worktrees_own(repo, worktree, ana_env):
    write_json(worktree / ".claude" / "settings.local.json", {"autoMemoryDirectory": "~/wt"})
    assert memory_dir_for(worktree, ana_env) == Path(ana_env["HOME"]) / "wt"
    assert memory_dir_for(repo, ana_env) != Path(ana_env["HOME"]) / "wt"


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_a_tracked_local_settings_file_is_recognised_in_every_index_version(repo, ana_env, version):
    git(repo, "config", "index.version", version)
    for name in ("a.txt", ".claude/settings.json", ".claude/settings.local.json", "z/b.txt"):
        write_json(repo / name, {"autoMemoryDirectory": "~/.ssh"})
    git(repo, "add", "-f", ".")
    if version != "2":  # an intent to add is an entry with extended flags (version 3 on)
        (repo / "+new.txt").write_text("x")
        git(repo, "add", "-N", "+new.txt")
    git(repo, "update-index", f"--index-version={version}")
    assert load_user_settings(ana_env, project_dir=repo) == {}
    git(repo, "rm", "-q", "--cached", ".claude/settings.local.json")
    assert load_user_settings(ana_env, project_dir=repo) == {"autoMemoryDirectory": "~/.ssh"}


def test_an_unreadable_index_counts_as_tracking_the_file(repo, ana_env):
    write_json(repo / ".claude" / "settings.local.json", {"autoMemoryDirectory": "~/notes"})
    (repo / ".git" / "index").write_bytes(b"DIRC\x00\x00\x00\x02\x00\x00\x00\x05garbage")
    assert load_user_settings(ana_env, project_dir=repo) == {}


# --- enabled ------------------------------------------------------------------------------------

ENABLED = [
    ({}, {}, True),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}, {}, False),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": " TRUE "}, {}, False),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "yes"}, {}, False),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "On"}, {}, False),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0"}, {}, True),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "maybe"}, {}, True),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": ""}, {}, True),
    # a defined falsy value forces it on, over everything else
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "false"}, {"autoMemoryEnabled": False}, True),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": " No ", "CLAUDE_CODE_SIMPLE": "1"}, {}, True),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "off"}, {}, True),
    ({"CLAUDE_CODE_SIMPLE": "1"}, {}, False),
    ({"CLAUDE_CODE_SIMPLE": "0"}, {}, False),  # "set" is enough
    ({"CLAUDE_CODE_SIMPLE": ""}, {}, True),
    ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "maybe", "CLAUDE_CODE_SIMPLE": "x"}, {}, False),
    ({}, {"autoMemoryEnabled": False}, False),
    ({}, {"autoMemoryEnabled": True}, True),
    ({}, {"autoMemoryEnabled": "false"}, True),  # only the JSON boolean counts
    # a remote session without a memory directory has no memory
    ({"CLAUDE_CODE_REMOTE": "true"}, {}, False),
    ({"CLAUDE_CODE_REMOTE": "true", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt/memory"}, {}, True),
    ({"CLAUDE_CODE_REMOTE": "1", "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "/srv/m"}, {}, True),
    ({"CLAUDE_CODE_REMOTE": "true", "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0"}, {}, True),
    ({"CLAUDE_CODE_REMOTE": ""}, {}, True),
]


@pytest.mark.parametrize(("env", "settings", "expected"), ENABLED)
def test_it_decides_whether_auto_memory_is_enabled(env, settings, expected):
    assert auto_memory_enabled({"HOME": "/nonexistent", **env}, settings) is expected


def test_enabled_reads_user_settings_when_none_are_given(tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path)}
    assert auto_memory_enabled(env) is True
    write_json(tmp_path / "settings.json", {"autoMemoryEnabled": False})
    assert auto_memory_enabled(env) is False


# --- agent memory -------------------------------------------------------------------------------


def test_user_scope_agent_memory_lives_under_the_memory_base():
    env = {"HOME": "/home/ana", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/remote"}
    assert agent_memory_dir("reviewer", "user", env) == Path("/remote/agent-memory/reviewer")
    assert agent_memory_dir("plugin:reviewer", "user", {"HOME": "/home/ana"}) == Path(
        "/home/ana/.claude/agent-memory/plugin-reviewer"
    )


def test_project_and_local_scope_agent_memory_live_in_the_repository(tmp_path):
    assert agent_memory_dir("a:b:c", "project", repo=tmp_path) == (
        tmp_path / ".claude" / "agent-memory" / "a-b-c"
    )
    assert agent_memory_dir("tester", "local", repo=str(tmp_path)) == (
        tmp_path / ".claude" / "agent-memory-local" / "tester"
    )


@pytest.mark.parametrize("agent", ["", ".", "..", "a/b", "../x", "a\\b", "a\0b"])
def test_agent_types_must_be_one_path_segment(agent, tmp_path):
    with pytest.raises(ValueError, match="single path segment"):
        agent_memory_dir(agent, "project", repo=tmp_path)


def test_agent_memory_needs_a_known_scope_and_a_repo_for_repo_scopes():
    with pytest.raises(ValueError, match="unknown"):
        agent_memory_dir("x", "team", {"HOME": "/h"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="repository"):
        agent_memory_dir("x", "local", {"HOME": "/h"})


def test_original_path_finds_the_directory_a_sanitized_name_came_from(tmp_path):
    app = tmp_path / "home" / "ana" / "my-app"
    app.mkdir(parents=True)
    (tmp_path / "home" / "ana" / "my").mkdir()  # "-my" is a prefix of "-my-app": a dead end
    (tmp_path / "home" / "ana.old").mkdir()
    root = str(tmp_path)
    name = sanitize_path(str(app))
    assert original_path(name) == app
    assert original_path(sanitize_path(str(tmp_path / "home" / "ana.old")), root) == (
        tmp_path / "home" / "ana.old"
    )


def test_original_path_is_none_when_the_directory_is_gone_or_the_name_hashed(tmp_path):
    assert original_path(sanitize_path(str(tmp_path / "gone" / "app"))) is None
    long = tmp_path / ("x" * 120) / ("y" * 120)
    long.mkdir(parents=True)
    assert original_path(sanitize_path(str(long))) is None
    assert original_path("not-starting-with-a-dash") is None


def test_original_path_stops_after_its_limit(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert original_path(sanitize_path(str(deep)), str(tmp_path.parent), limit=2) is None
    assert original_path(sanitize_path(str(deep)), str(tmp_path.parent)) == deep
