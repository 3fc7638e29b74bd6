"""The real Claude Code CLI with memhub as its MCP server (docs/design.md §27): the fake model
calls `mcp__memhub__recall`, and the next request the CLI sends holds memhub's answer. Once
over HTTP with the token in a header, once over stdio as `memhub-agent install claude-code`
writes it, and with the plugin installed from the repository's marketplace (hooks and tools)."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from memapp.stores.actions import do_save_memory
from memapp.stores.projects import resolve_store
from tests.api.fake_anthropic import FakeAnthropic, _Script, message, tool_message
from tests.claude_code import CLAUDE, needs_claude
from tests.client.conftest import AGENT, SLUG

pytestmark = [pytest.mark.django_db(transaction=True), needs_claude]

PROMPT = "When do deploys go out?"
TOOL = "mcp__memhub__recall"
PLUGIN_TOOL = "mcp__plugin_memhub_memhub__recall"  # a plugin's server is named for its plugin
WAIT = "WaitForMcpServers"  # the CLI connects MCP servers while its first request goes out
REPO = CLAUDE.parents[3]


def _use_id(name: str) -> str:
    return "toolu_" + name.replace("_", "").lower()


def _calling(name: str, tool_input: dict, suffix: str = "", id_of: str = "") -> _Script:
    body = tool_message(name, tool_input)
    body["content"][0]["id"] = _use_id(id_of or name) + suffix
    return _Script(200, body)


class ToolCallingModel(FakeAnthropic):
    """Calls memhub's recall tool when the CLI offers it for the prompt (first waiting for
    the MCP servers, which `claude -p` connects while the first request is sent); then
    answers in text."""

    @property
    def _script(self) -> _Script:
        body = self.requests[-1].body if self.requests else {}
        text = json.dumps(body.get("messages", []))
        offered = {tool.get("name") for tool in body.get("tools") or []}
        called = re.findall(r'"type": "tool_use", "id": "[^"]*", "name": "([^"]+)"', text)
        # A plugin's server is named for its plugin: mcp__plugin_memhub_memhub__recall.
        recall = next((n for n in offered if re.fullmatch(r"mcp__.*memhub__recall", n)), None)
        if PROMPT in text and not any(name.endswith("memhub__recall") for name in called):
            if recall:
                return _calling(recall, {"query": PROMPT}, id_of="recall")
            waited = called.count(WAIT)
            if WAIT in offered and waited < 10 and "ready: true" not in text:
                return _calling(WAIT, {}, f"{waited}")
        return _Script(200, message("Tuesdays."))

    @_script.setter
    def _script(self, value: _Script) -> None:
        pass


def _claude(machine, fake, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CLAUDE), *args],
        cwd=machine.checkout,
        env={
            **machine.env,
            "IS_SANDBOX": "1",
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
            "DISABLE_AUTOUPDATER": "1",
            "ENABLE_TOOL_SEARCH": "false",  # MCP tools in the request, not behind a search
        },
        capture_output=True,
        text=True,
        timeout=180,
    )


def _tool_result(fake) -> str:
    """The text of memhub's recall result in the request the CLI sent after the call."""
    for request in fake.requests:
        for item in request.body.get("messages", []):
            for block in item["content"] if isinstance(item["content"], list) else []:
                if block.get("type") == "tool_result" and block["tool_use_id"] == _use_id("recall"):
                    content = block["content"]
                    parts = content if isinstance(content, list) else [{"text": content}]
                    return "\n".join(part.get("text", "") for part in parts)
    raise AssertionError("the CLI sent no tool result")


@pytest.fixture
def remembered(alice, server):
    store = resolve_store(alice, SLUG, "private")
    do_save_memory(
        store,
        alice,
        name="Deploys",
        description="How deploys work",
        memory_type="project",
        body="Deploys go out on Tuesdays through the release train.\n",
    )


def test_over_http_with_a_header_the_model_gets_memhubs_recall(machine_a, server, remembered):
    config = machine_a.home / ".claude"
    config.mkdir(parents=True)
    (config / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "memhub": {
                        "type": "http",
                        "url": f"{server.url}/mcp/{SLUG}/",
                        "headers": {"Authorization": f"Bearer {server.token}"},
                    }
                }
            }
        )
    )
    with ToolCallingModel() as fake:
        result = _claude(machine_a, fake, "-p", PROMPT, "--allowedTools", TOOL)
        assert result.returncode == 0, result.stderr
        text = _tool_result(fake)
    assert "Memory (saved today): /memories/project_deploys.md:" in text
    assert "Tuesdays through the release train" in text


def test_over_stdio_as_installed_the_model_gets_memhubs_recall(machine_a, server, remembered):
    machine_a.login(server)
    assert machine_a.run("install", "claude-code").returncode == 0
    with ToolCallingModel() as fake:
        result = _claude(machine_a, fake, "-p", PROMPT, "--allowedTools", TOOL)
        assert result.returncode == 0, result.stderr
        text = _tool_result(fake)
    assert "Tuesdays through the release train" in text


def test_with_the_plugin_from_the_marketplace_the_model_gets_hooks_and_tools(
    machine_a, server, remembered
):
    machine_a.extra_env["PATH"] = f"{AGENT.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    machine_a.login(server)
    with ToolCallingModel() as fake:
        added = _claude(machine_a, fake, "plugin", "marketplace", "add", str(REPO))
        assert added.returncode == 0, added.stderr
        installed = _claude(machine_a, fake, "plugin", "install", "memhub@memhub")
        assert installed.returncode == 0, installed.stderr
        listed = _claude(machine_a, fake, "plugin", "list")
        assert "memhub@memhub" in listed.stdout and "enabled" in listed.stdout
        result = _claude(machine_a, fake, "-p", PROMPT, "--allowedTools", PLUGIN_TOOL)
        offered = {t["name"] for r in fake.requests for t in r.body.get("tools") or []}
        assert PLUGIN_TOOL in offered, sorted(n for n in offered if "mcp" in n)
        assert result.returncode == 0, result.stderr
        asked = [r for r in fake.requests if PROMPT in json.dumps(r.body.get("messages"))]
        text = _tool_result(fake)
    # The UserPromptSubmit hook's recall reached the model with the prompt, and the tool answered.
    assert "Deploys go out on Tuesdays" in json.dumps(asked[0].body["messages"])
    assert "Tuesdays through the release train" in text
