"""Gemini CLI's and Codex CLI's hooks with bad input, and `memhub-agent install gemini-cli|codex`
(docs/design.md §28), with the real console script. A hook given a payload with missing or
wrong fields, an event it does not know, or an agent it does not know, prints nothing and exits
0. Install is idempotent, backs a file up before it changes it, keeps everything else, and
`--uninstall` removes exactly what it added."""

from __future__ import annotations

import json

import pytest

from tests.client.conftest import Machine

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a(machine_a, server) -> Machine:
    machine_a.login(server)
    return machine_a


BAD_PAYLOADS = ["", "not json", "[]", "{}", '{"prompt": 5}', '{"session_id": 7, "cwd": []}']


@pytest.mark.parametrize(
    ("agent", "event"),
    [
        ("gemini-cli", "session-start"),
        ("gemini-cli", "before-agent"),
        ("gemini-cli", "after-agent"),
        ("codex", "user-prompt-submit"),
        ("codex", "stop"),
    ],
)
def test_a_hook_with_a_bad_payload_is_silent(a, agent, event):
    for stdin in BAD_PAYLOADS:
        result = a.run("hook", agent, event, stdin=stdin)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), stdin


@pytest.mark.parametrize(
    "argv",
    [
        ("hook", "gemini-cli", "user-prompt-submit"),  # Claude Code's event name, not Gemini's
        ("hook", "codex", "before-agent"),
        ("hook", "cursor", "stop"),
        ("hook", "gemini-cli"),
    ],
)
def test_an_unknown_event_or_agent_is_silent(a, argv):
    payload = json.dumps({"session_id": "s1", "cwd": str(a.checkout), "prompt": "tests?"})
    result = a.run(*argv, stdin=payload)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_install_gemini_cli_keeps_the_rest_and_uninstall_removes_exactly_its_own(a):
    settings = a.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {
        "theme": "Dracula",
        "mcpServers": {"other": {"command": "other-server"}},
        "hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": "my-linter"}]}]},
    }
    settings.write_text(json.dumps(mine))

    first = a.run("install", "gemini-cli")
    assert first.returncode == 0, first.stderr
    written = json.loads(settings.read_text())
    assert written["theme"] == "Dracula"
    assert written["mcpServers"]["other"] == {"command": "other-server"}
    assert written["mcpServers"]["memhub"]["args"] == ["mcp"]
    commands = [h["command"] for g in written["hooks"]["BeforeAgent"] for h in g["hooks"]]
    assert commands[0] == "my-linter" and commands[1].endswith("hook gemini-cli before-agent")
    assert set(written["hooks"]) == {"SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"}
    backups = list(settings.parent.glob("settings.json.memhub-backup-*"))
    assert [json.loads(b.read_text()) for b in backups] == [mine]

    again = a.run("install", "gemini-cli")
    assert again.stdout.strip().endswith("unchanged")
    assert json.loads(settings.read_text()) == written

    removed = a.run("install", "gemini-cli", "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text()) == mine


def test_install_gemini_cli_refuses_another_server_named_memhub(a):
    settings = a.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {"mcpServers": {"memhub": {"command": "someone-elses"}}}
    settings.write_text(json.dumps(theirs))
    result = a.run("install", "gemini-cli")
    assert result.returncode != 0
    assert "already has another MCP server named 'memhub'" in result.stderr
    assert json.loads(settings.read_text()) == theirs


def test_install_codex_keeps_the_config_text_and_uninstall_restores_it(a):
    home = a.home / ".codex"
    home.mkdir()
    config = home / "config.toml"
    text = '# my settings\nmodel = "o3"  # keep\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    config.write_text(text)

    first = a.run("install", "codex")
    assert first.returncode == 0, first.stderr
    assert config.read_text().startswith(text)
    assert "[mcp_servers.memhub]" in config.read_text()
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert a.run("install", "codex").stdout.count("unchanged") == 2

    removed = a.run("install", "codex", "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert config.read_text() == text
    assert json.loads((home / "hooks.json").read_text()) == {}


def test_install_codex_leaves_a_broken_config_alone(a):
    config = a.home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("model = \n")
    result = a.run("install", "codex")
    assert result.returncode != 0
    assert "is not valid TOML" in result.stderr
    assert config.read_text() == "model = \n"
    assert not (a.home / ".codex" / "hooks.json").exists()


def test_install_all_sets_up_every_agent_on_the_machine(a):
    (a.home / ".gemini").mkdir()
    (a.home / ".codex").mkdir()  # no Claude Code here: no ~/.claude, no `claude` on the PATH
    a.extra_env["PATH"] = "/usr/bin:/bin"
    result = a.run("install", "--all")
    assert result.returncode == 0, result.stderr
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == {"gemini-cli", "codex"}
    assert (a.home / ".gemini" / "settings.json").is_file()
    assert (a.home / ".codex" / "hooks.json").is_file()
    assert a.run("install", "--all", "--uninstall").returncode == 0
    assert a.run("install").returncode != 0  # neither an agent nor --all


def test_the_agents_own_memory_switches_are_honoured(machine_a, recording_server):
    """Codex's `use_memories = false` silences the prompt hook (nothing asked of the server);
    Gemini CLI's `autoMemory: false` stops only what makes memory, so its recall still asks."""
    machine_a.extra_env.update(MEMHUB_URL=recording_server.url, MEMHUB_TOKEN="mh_x")
    prompt = json.dumps(
        {"session_id": "s1", "cwd": str(machine_a.checkout), "prompt": "how do we test the db?"}
    )
    machine_a.run("hook", "codex", "user-prompt-submit", stdin=prompt)
    assert recording_server.requests, "the control: with memory on, the hook asks the server"
    recording_server.requests.clear()
    (machine_a.home / ".codex").mkdir()
    (machine_a.home / ".codex" / "config.toml").write_text(
        'model = "gpt-5"\n\n[memories]\nuse_memories = false\n'
    )
    result = machine_a.run("hook", "codex", "user-prompt-submit", stdin=prompt)
    assert (result.returncode, result.stdout, recording_server.requests) == (0, "", [])

    (machine_a.home / ".gemini").mkdir()
    (machine_a.home / ".gemini" / "settings.json").write_text(
        json.dumps({"experimental": {"autoMemory": False}})
    )
    machine_a.run("hook", "gemini-cli", "before-agent", stdin=prompt)
    assert recording_server.requests  # recall is not what autoMemory switches off
