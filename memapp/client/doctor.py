"""`memhub-agent doctor`: is everything a coding agent needs from memhub in place? One line per
check, each failure with the command that fixes it (docs/design.md §27)."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from memapp.client.commands import (
    CWD_OPTION,
    EXIT_OK,
    EXIT_PARTIAL,
    PROG,
    add_command,
    connect,
    current_project,
)
from memapp.client.config import config_problem, load_config
from memapp.client.http import ApiError, BehindProxy, NotMemhub, Unreachable
from memapp.client.install import agent_module, agents_here
from memapp.client.mcp_stdio import Relay

__all__ = ["Check", "add_doctor_command", "checks"]

TIMEOUT = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    said: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark} {self.name}: {self.said}" + ("" if self.ok else f"\n     fix: {self.fix}")


def _server_checks() -> tuple[list[Check], bool]:
    config = load_config()
    login = f"{PROG} login URL --token -"
    if config is None:
        problem = config_problem() or "not logged in"
        return [Check("login", False, problem, login)], False
    try:
        me = connect(config, timeout=TIMEOUT).get("/api/v1/me")
        token = f"{me['username']}'s token {me.need('token', dict)['name']!r} is valid"
    except BehindProxy as exc:
        fix = "start memhub behind the proxy, or ask whoever runs it"
        return [Check("server", False, str(exc), fix)], False
    except NotMemhub as exc:
        return [Check("server", False, str(exc), f"log in with memhub's own URL: {login}")], False
    except Unreachable as exc:
        fix = f"start the server, or log in to the right URL: {login}"
        return [Check("server", False, str(exc), fix)], False
    except ApiError as exc:
        server = Check("server", True, f"{config.url} is memhub")
        again = f"{PROG} login {config.url} --token -"  # the server is right: only the token
        if exc.status in (401, 403):
            return [server, Check("token", False, exc.message, f"make a new token: {again}")], False
        return [server, Check("token", False, f"{exc.message} [HTTP {exc.status}]", again)], False
    return [
        Check("server", True, f"{config.url} is memhub {me.get('version', '?')}"),
        Check("token", True, token),
    ], True


def _mcp_answers(ref: str) -> Check:
    """Ask the server's MCP endpoint for its tools, as `memhub-agent mcp` would."""
    config = load_config()
    assert config is not None
    out = io.StringIO()
    relay = Relay(config.url, config.token, ref, out)
    relay.relay({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    try:
        answer = json.loads(out.getvalue() or "{}")
    except ValueError:
        answer = {}
    tools = (answer.get("result") or {}).get("tools")
    if isinstance(tools, list):
        return Check("MCP answers", True, f"{len(tools)} tools at {relay.endpoint}")
    error = (answer.get("error") or {}).get("message", "no answer")
    return Check("MCP answers", False, f"{relay.endpoint}: {error}", "see the server's log")


def _install_checks(agent: str, checkout: Path) -> list[Check]:
    module = agent_module(agent)
    events: list[str] = []
    server = False
    for scope in ("user", "project"):
        found, has_server = module.installed(scope, checkout)
        events += found
        server = server or has_server
    fix = f"{PROG} install {agent}"
    expected = len(module.HOOKS)
    hooks = Check(
        f"{agent} hooks",
        len(set(events)) == expected,
        f"{len(set(events))} of {expected} installed",
        fix,
    )
    found = shutil.which(PROG)
    command = Check(
        f"{PROG} on PATH",
        found is not None,
        found or "not found",
        "install memhub's client where the agent's PATH finds it (the command on the "
        "site's Connect your agent page)",
    )
    return [
        hooks,
        Check(f"{agent} MCP server", server, "installed" if server else "missing", fix),
        command,
    ]


def checks(cwd: str | None) -> list[Check]:
    found, connected = _server_checks()
    project = current_project(cwd)
    found.append(Check("project", True, f"{project.ref} ({project.checkout})"))
    found.append(
        Check(
            "memory dir",
            project.memory_dir.is_dir(),
            str(project.memory_dir) + ("" if project.memory_dir.is_dir() else " does not exist"),
            f"start the agent once in this project, or `{PROG} sync` to fetch it",
        )
    )
    for agent in agents_here() or ["claude-code"]:  # every agent on this machine
        found += _install_checks(agent, project.checkout)
    if connected:
        found.append(_mcp_answers(project.ref))
    return found


def cmd_doctor(args: argparse.Namespace) -> int:
    results = checks(args.cwd)
    for check in results:
        print(check.line())
    return EXIT_OK if all(check.ok for check in results) else EXIT_PARTIAL


def add_doctor_command(commands: argparse._SubParsersAction) -> None:
    doctor = add_command(
        commands,
        "doctor",
        "check the login, the server, the project and the agent's hooks and MCP server",
        description="One line per check: the server is reachable and is memhub, the token is "
        "valid, the project and its memory dir are found, the hooks and the MCP server are "
        "installed, and the server's MCP endpoint answers. A failed check says how to fix it; "
        "the exit status is 1 when any failed.",
        examples=["doctor", "doctor --cwd ~/src/widgets"],
        parents=[CWD_OPTION],
    )
    doctor.set_defaults(func=cmd_doctor)
