"""The real Claude Code CLI for end-to-end tests: memhub's hooks installed as the README shows,
`claude -p` run in a machine's checkout with its model requests going to a fake Messages API,
and the text of the request the CLI sent the model.

The CLI is the pinned `@anthropic-ai/claude-code` that `./scripts/test` installs into `.node/`
with npm (README, "Testing with the real Claude Code"); tests marked `needs_claude` are skipped,
saying so, without it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.api.fake_anthropic import FakeAnthropic, RecordedRequest
from tests.client.conftest import AGENT, Machine

CLAUDE = Path(__file__).resolve().parents[1] / ".node" / "node_modules" / ".bin" / "claude"

needs_claude = pytest.mark.skipif(
    not CLAUDE.exists(),
    reason="the Claude Code CLI is not installed in .node/: ./scripts/test installs it when npm "
    "is present (see the README)",
)

# Claude Code's hook events and memhub-agent's names for them, as the README registers them.
HOOKS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt-submit",
    "PostToolUse": "post-tool-use",
    "Stop": "stop",
    "SessionEnd": "session-end",
}


def install_hooks(machine: Machine) -> None:
    """memhub's hooks in the user's settings, as the README shows them."""
    settings = {
        "hooks": {
            event: [
                {
                    **({"matcher": "Read|Grep"} if event == "PostToolUse" else {}),
                    "hooks": [{"type": "command", "command": f"{AGENT} hook claude-code {name}"}],
                }
            ]
            for event, name in HOOKS.items()
        }
    }
    path = machine.home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


def request_text(request: RecordedRequest) -> str:
    """The system prompt and the messages' text of one request, in order."""
    texts = [block["text"] for block in request.body.get("system") or []]
    for message in request.body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts += [block.get("text", "") for block in blocks if block.get("type") == "text"]
    return "\n".join(texts)


def ask_claude(
    machine: Machine, fake: FakeAnthropic, prompt: str, args: tuple[str, ...] = (), **env: str
) -> str:
    """Run `claude -p PROMPT [ARGS]` in the checkout (hooks and all, until the CLI exits); the
    text of the first request it sent the model with the prompt: the main turn's."""
    result = subprocess.run(
        [str(CLAUDE), "-p", prompt, *args],
        cwd=machine.checkout,
        env={
            **machine.env,
            "IS_SANDBOX": "1",  # root may run it
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
            "DISABLE_AUTOUPDATER": "1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    asked = [r for r in fake.requests if prompt in json.dumps(r.body.get("messages"))]
    assert asked, f"the CLI never sent {prompt!r} to the model"
    return request_text(asked[0])
