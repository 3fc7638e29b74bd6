"""The real Gemini CLI and Codex CLI for end-to-end tests (docs/design.md §28), and fake model
APIs on 127.0.0.1 for them: Gemini's `generateContent`/`streamGenerateContent` (Gemini CLI reads
`GOOGLE_GEMINI_BASE_URL`) and OpenAI's Responses API (Codex's `model_providers.<id>.base_url`).
Each fake records every request's path and JSON body and answers with one fixed text, streamed
the way the real API streams it (server-sent events).

The CLIs are the pinned npm packages `./scripts/test` installs into `.node-agents/`
(`setup_other_agents` in scripts/_setup.sh); tests marked `needs_gemini`/`needs_codex` are
skipped, saying so, without them."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

__all__ = ["CODEX", "GEMINI", "FakeGemini", "Recorded", "needs_codex", "needs_gemini"]

BIN = Path(__file__).resolve().parents[1] / ".node-agents" / "node_modules" / ".bin"
GEMINI = BIN / "gemini"
CODEX = BIN / "codex"
_MISSING = "is not installed in .node-agents/: ./scripts/test installs it when npm is present"
needs_gemini = pytest.mark.skipif(not GEMINI.exists(), reason=f"Gemini CLI {_MISSING}")
needs_codex = pytest.mark.skipif(not CODEX.exists(), reason=f"Codex CLI {_MISSING}")


@dataclass(frozen=True)
class Recorded:
    path: str
    body: dict

    @property
    def text(self) -> str:
        """Every string in the request, in order: whatever the CLI put in front of the model."""
        found: list[str] = []

        def walk(value: object) -> None:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, list):
                for item in value:
                    walk(item)
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)

        walk(self.body)
        return "\n".join(found)


class _Fake:
    """A threaded HTTP server recording POSTs; subclasses write the answer."""

    def __init__(self, reply: str = "Noted.") -> None:
        self.reply = reply
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: dict) -> None:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                with fake._lock:
                    fake.requests.append(Recorded(self.path, body))
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    fake.answer(self, self.path, body)

            def do_GET(self) -> None:  # noqa: N802
                send(self, 404, "application/json", b"{}")

            def log_message(self, *args) -> None:
                pass

        return Handler


def send(handler: BaseHTTPRequestHandler, status: int, kind: str, data: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


# What Gemini CLI's model router asks for in JSON before each turn (its NumericalClassifier).
ROUTE = json.dumps({"complexity_reasoning": "A simple question.", "complexity_score": 10})


class FakeGemini(_Fake):
    """Gemini's API: every generate call answers `reply` as one candidate (a JSON request, the
    CLI's routing, gets a routing answer)."""

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: dict) -> None:
        if ":countTokens" in path:
            send(handler, 200, "application/json", b'{"totalTokens": 10}')
            return
        config = body.get("generationConfig") or {}
        text = ROUTE if config.get("responseMimeType") == "application/json" else self.reply
        response = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 2,
                "totalTokenCount": 12,
            },
            "modelVersion": "gemini-2.5-pro",
        }
        if ":streamGenerateContent" in path:
            event = f"data: {json.dumps(response)}\r\n\r\n".encode()
            send(handler, 200, "text/event-stream", event)
        else:
            send(handler, 200, "application/json", json.dumps(response).encode())

    def turns(self, prompt: str) -> list[Recorded]:
        """The main turns' requests (not the router's) that hold `prompt`."""
        return [
            r
            for r in self.requests
            if "enerateContent" in r.path
            and prompt in r.text
            and (r.body.get("generationConfig") or {}).get("responseMimeType") != "application/json"
        ]


def ask_gemini(
    env: dict[str, str], cwd: Path, fake: FakeGemini, prompt: str
) -> subprocess.CompletedProcess:
    """`gemini -p PROMPT` in `cwd`, its model requests going to `fake`, until it exits."""
    return subprocess.run(
        [str(GEMINI), "-p", prompt],
        cwd=cwd,
        env={
            **env,
            "GEMINI_CLI_HOME": env["HOME"],
            "GOOGLE_GEMINI_BASE_URL": fake.url,
            "GEMINI_API_KEY": "test-key-not-a-key",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",  # a headless run in a new folder
        },
        capture_output=True,
        text=True,
        timeout=180,
    )


class FakeOpenAI(_Fake):
    """OpenAI's Responses API as Codex streams it: every `POST …/responses` answers `reply` as
    one assistant message (`response.created`, `response.output_item.done`,
    `response.completed`)."""

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: dict) -> None:
        if not path.rstrip("/").endswith("/responses"):
            send(handler, 404, "application/json", b'{"error": {"message": "not here"}}')
            return
        item = {
            "type": "message",
            "role": "assistant",
            "id": "msg_fake",
            "status": "completed",
            "content": [{"type": "output_text", "text": self.reply, "annotations": []}],
        }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 12,
        }
        events = [
            {"type": "response.created", "response": {"id": "resp_fake"}},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": "resp_fake", "usage": usage}},
        ]
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        send(handler, 200, "text/event-stream", data.encode())


def codex_config(fake: FakeOpenAI) -> str:
    """config.toml lines that send Codex's model requests to `fake`."""
    return (
        'model = "gpt-fake"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "{fake.url}/v1"\nwire_api = "responses"\n'
        'env_key = "FAKE_OPENAI_KEY"\n'
    )


def ask_codex(env: dict[str, str], cwd: Path, prompt: str) -> subprocess.CompletedProcess:
    """`codex exec PROMPT` in `cwd` (its config in `$CODEX_HOME`), until it exits."""
    return subprocess.run(
        [str(CODEX), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", prompt],
        cwd=cwd,
        env={**env, "CODEX_HOME": str(Path(env["HOME"]) / ".codex"), "FAKE_OPENAI_KEY": "k"},
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
