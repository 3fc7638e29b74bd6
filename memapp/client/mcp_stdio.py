"""`memhub-agent mcp`: memhub's MCP server over stdio, for agents that start local servers
(docs/design.md §27).

A relay, not a second server: each JSON-RPC message read from stdin is POSTed to the server's
`/mcp/<project>/` (the project found from the working directory as the hooks find it) with the
stored login, and the answer is written to stdout. The server is sessionless, so every message
stands alone; the relay adds the headers Streamable HTTP asks for (the protocol version, and
for the 2026-07-28 revision the method and name) and one session id per process, which the
server's recall uses for its per-session budget. It imports only the standard library, so it
is ready at once (the SDK alone takes most of a second to import).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import re
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from typing import IO, Any
from urllib.parse import quote

from memapp.client.commands import CWD_OPTION, PROG, add_command, current_project
from memapp.client.config import load_config
from memapp.client.http import USER_AGENT
from memapp.client.transport import no_redirect

__all__ = ["add_mcp_command", "headers_for", "serve"]

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
# The parameter whose value each method's `Mcp-Name` header repeats.
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
HANDSHAKE_VERSION = "2025-11-25"  # said until an `initialize` answer says otherwise
_HEADER_SAFE = re.compile(r"^[\x20-\x7e]*$")
TIMEOUT = 60.0


def _header_value(value: str) -> str:
    """A header value as Streamable HTTP sends one: base64-wrapped unless plain ASCII."""
    if _HEADER_SAFE.fullmatch(value) and value == value.strip() and not value.startswith("=?"):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def headers_for(message: Mapping[str, Any], negotiated: str) -> dict[str, str]:
    """The routing headers of one message: a 2026-07-28 message (its version in `_meta`) names
    its method and name; a handshake-era one carries the version `initialize` negotiated."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    if not isinstance(version, str):
        return {} if message.get("method") == "initialize" else {"MCP-Protocol-Version": negotiated}
    headers = {"MCP-Protocol-Version": version}
    method = message.get("method")
    if isinstance(method, str):
        headers["Mcp-Method"] = method
        name = params.get(NAME_PARAMS.get(method, "")) if isinstance(params, dict) else None
        if isinstance(name, str):
            headers["Mcp-Name"] = _header_value(name)
    return headers


def _error(request_id: Any, message: str, code: int = -32603) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _answers(body: bytes, kind: str) -> list[Any]:
    """The JSON-RPC messages of an answer: a JSON body, or the `data:` lines of an SSE one."""
    text = body.decode("utf-8", "replace")
    if "text/event-stream" in kind:
        return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(text)] if text.strip() else []


class Relay:
    """Relays messages to one server's `/mcp/<project>/`, writing answers to `out`."""

    def __init__(self, url: str, token: str, project: str, out: IO[str]) -> None:
        self.endpoint = f"{url}/mcp/{quote(project, safe='/')}/"
        self.token = token
        self.out = out
        self.session = uuid.uuid4().hex
        self.negotiated = HANDSHAKE_VERSION
        self.lock = threading.Lock()

    def write(self, message: Any) -> None:
        with self.lock:
            self.out.write(json.dumps(message, ensure_ascii=False) + "\n")
            self.out.flush()

    def relay(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        answers = self._post(message)
        for answer in answers:
            if isinstance(answer, dict) and "error" in answer and answer.get("id") is None:
                answer["id"] = request_id  # refused before the server read the id
            if message.get("method") == "initialize" and isinstance(answer, dict):
                version = (answer.get("result") or {}).get("protocolVersion")
                self.negotiated = version if isinstance(version, str) else self.negotiated
            if request_id is not None:
                self.write(answer)

    def _post(self, message: dict[str, Any]) -> list[Any]:
        request = urllib.request.Request(
            self.endpoint, data=json.dumps(message).encode("utf-8"), method="POST"
        )
        for name, value in {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "User-Agent": USER_AGENT,
            "X-Memhub-Session": self.session,
            **headers_for(message, self.negotiated),
        }.items():
            request.add_header(name, value)
        request_id = message.get("id")
        # Redirects are not followed: urllib would send the token on to wherever one points.
        opener = urllib.request.build_opener(no_redirect())
        try:
            with opener.open(request, timeout=TIMEOUT) as response:
                answers = _answers(response.read(), response.headers.get("Content-Type") or "")
            return answers or self._unanswered(request_id, "no JSON-RPC answer")
        except urllib.error.HTTPError as exc:
            body = exc.read()
            with contextlib.suppress(ValueError):
                answers = _answers(body, exc.headers.get("Content-Type") or "")
                if answers:
                    return answers
            moved = exc.headers.get("Location") if 300 <= exc.code < 400 else None
            if moved:
                return self._unanswered(
                    request_id,
                    f"a redirect to {moved} (not followed, so the token goes nowhere else: "
                    "log in with the server's own URL)",
                )
            return self._unanswered(request_id, f"HTTP {exc.code}")
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return [_error(request_id, f"cannot reach memhub at {self.endpoint}: {reason}")]
        except ValueError:
            return [_error(request_id, f"{self.endpoint} did not answer as an MCP server")]

    def _unanswered(self, request_id: Any, what: str) -> list[Any]:
        """The error a request gets when memhub's answer held none for it (a notification
        needs none)."""
        if request_id is None:
            return []
        return [_error(request_id, f"memhub at {self.endpoint} answered {what}")]


def serve(relay: Relay, lines: IO[str]) -> None:
    """Relay each line of `lines` (one JSON-RPC message) in a thread of its own, so a slow
    recall does not hold up a listing; returns at the end of input once all are answered."""
    threads = []
    for line in lines:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            relay.write(_error(None, "not a JSON-RPC message", -32700))
            continue
        if not isinstance(message, dict):
            relay.write(_error(None, "a JSON-RPC message is an object", -32600))
            continue
        thread = threading.Thread(target=relay.relay, args=(message,), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(TIMEOUT)


def _refuse_all(reason: str, lines: IO[str], out: IO[str]) -> None:
    """Without a login every request gets the same sentence, so the agent can tell the user."""
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") is not None:
            out.write(json.dumps(_error(message["id"], reason, -32600)) + "\n")
            out.flush()


def cmd_mcp(args: argparse.Namespace) -> int:
    config = load_config()
    if config is None:
        print(f"{PROG} mcp: not logged in: run `{PROG} login URL --token -`", file=sys.stderr)
        _refuse_all(f"memhub: not logged in; run `{PROG} login` first.", sys.stdin, sys.stdout)
        return 0
    project = current_project(args.cwd)
    serve(Relay(config.url, config.token, project.ref, sys.stdout), sys.stdin)
    return 0


def add_mcp_command(commands: argparse._SubParsersAction) -> None:
    mcp = add_command(
        commands,
        "mcp",
        "serve memhub's MCP tools over stdio (for agents that start MCP servers)",
        description="An MCP server on stdin/stdout for coding agents: recall, search, memory, "
        "log and proposals of the project of the working directory, answered by the memhub "
        "server this machine logged in to. Register it with `memhub-agent install "
        "claude-code`, or in an agent's MCP settings as the command `memhub-agent mcp`.",
        examples=["mcp", "mcp --cwd ~/src/widgets"],
        parents=[CWD_OPTION],
    )
    mcp.set_defaults(func=cmd_mcp)
