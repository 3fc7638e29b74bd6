"""`memhub-agent install claude-code`: the hooks and the MCP server written into Claude Code's
settings idempotently, the person's own settings untouched, and removed exactly."""

from __future__ import annotations

import json

from tests.client.conftest import AGENT

THEIR_HOOK = {"hooks": [{"type": "command", "command": "say done"}]}


def _json(path):
    return json.loads(path.read_text())


def test_user_scope_install_is_idempotent_keeps_their_settings_and_uninstalls_exactly(machine_a):
    config = machine_a.home / ".claude"
    config.mkdir(parents=True)
    settings_file, mcp_file = config / "settings.json", config / ".claude.json"
    theirs = {"model": "opus", "hooks": {"Stop": [THEIR_HOOK]}}
    their_config = {"userID": "u1", "mcpServers": {"other": {"type": "http", "url": "https://x"}}}
    settings_file.write_text(json.dumps(theirs))
    mcp_file.write_text(json.dumps(their_config))

    first = machine_a.run("install", "claude-code")
    assert first.returncode == 0, first.stderr
    settings = _json(settings_file)
    assert settings["model"] == "opus"
    assert settings["hooks"]["Stop"][0] == THEIR_HOOK
    commands = {
        event: [h["command"] for g in groups for h in g["hooks"]]
        for event, groups in settings["hooks"].items()
    }
    assert commands["UserPromptSubmit"] == [f"{AGENT} hook claude-code user-prompt-submit"]
    assert commands["Stop"] == ["say done", f"{AGENT} hook claude-code stop"]
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "Read|Grep"
    servers = _json(mcp_file)["mcpServers"]
    assert servers["other"] == their_config["mcpServers"]["other"]
    assert servers["memhub"] == {"type": "stdio", "command": str(AGENT), "args": ["mcp"], "env": {}}
    assert len(list(config.glob("settings.json.memhub-backup-*"))) == 1
    assert json.loads(next(config.glob("settings.json.memhub-backup-*")).read_text()) == theirs

    again = machine_a.run("install", "claude-code")
    assert again.returncode == 0 and again.stdout.count("unchanged") == 2, again.stdout
    assert _json(settings_file) == settings

    removed = machine_a.run("install", "claude-code", "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert _json(settings_file) == theirs
    assert _json(mcp_file) == their_config


def test_project_scope_writes_the_checkouts_files_without_a_token(machine_a, server):
    machine_a.login(server)
    result = machine_a.run("install", "claude-code", "--scope", "project")
    assert result.returncode == 0, result.stderr
    settings = _json(machine_a.checkout / ".claude" / "settings.json")
    assert set(settings["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    }
    mcp = (machine_a.checkout / ".mcp.json").read_text()
    assert json.loads(mcp)["mcpServers"]["memhub"]["args"] == ["mcp"]
    assert server.token not in mcp
    assert not (machine_a.home / ".claude" / "settings.json").exists()

    machine_a.run("install", "claude-code", "--scope", "project", "--uninstall")
    assert _json(machine_a.checkout / ".claude" / "settings.json") == {}
    assert _json(machine_a.checkout / ".mcp.json") == {}


def test_it_refuses_to_replace_another_server_named_memhub(machine_a):
    config = machine_a.home / ".claude"
    config.mkdir(parents=True)
    theirs = {"mcpServers": {"memhub": {"type": "http", "url": "https://their.memhub"}}}
    (config / ".claude.json").write_text(json.dumps(theirs))
    result = machine_a.run("install", "claude-code")
    assert result.returncode == 2
    assert "already has another MCP server named 'memhub'" in result.stderr
    assert _json(config / ".claude.json") == theirs
    assert not (config / "settings.json").exists()


def test_the_plugins_hooks_are_the_installers():
    """The Claude Code plugin (plugins/memhub) and `install claude-code` register the same
    events and matchers: the plugin had kept `Read` when the installer's PostToolUse hook
    learnt `Grep`."""
    from pathlib import Path

    from memapp.client.install.claude_code import HOOKS

    plugin = Path(__file__).resolve().parents[2] / "plugins" / "memhub" / "hooks" / "hooks.json"
    registered = {
        event: (group["hooks"][0]["command"].rsplit(" ", 1)[1], group.get("matcher"))
        for event, [group] in _json(plugin)["hooks"].items()
    }
    assert registered == HOOKS
    assert HOOKS["PostToolUse"] == ("post-tool-use", "Read|Grep")
