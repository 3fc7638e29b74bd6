"""A fake Anthropic Messages API: a real HTTP server on 127.0.0.1 for the real SDK to talk to.

The SDK's transport (httpx2) is not intercepted by respx, and the SDK must not be patched, so
tests point `ANTHROPIC_BASE_URL` at this server. It records every request (path, headers, JSON
body) and answers each one from its current script:

    with FakeAnthropic() as fake:
        fake.answer(["feedback_testing.md"])   # {"selected_memories": [...]} as a text block
        fake.answer(["a.md"], delay=0.4)       # the same, 400 ms late (a real model's pace)
        fake.overloaded()                      # 529 overloaded_error
        fake.stall(5.0)                        # answer only after `seconds` (past a timeout)
        fake.answer_text("{not json")          # a text block that is not JSON
        fake.propose([{"action": "create", …}])  # a propose_memory_changes tool call
        fake.answer_tool("other_tool", {…})    # a call of another tool, or other input
        fake.requests[0].body["model"]

A script applies to every request until it is replaced, so the SDK's retry sees the same
answer as its first attempt. A request with `"stream": true` (as Claude Code's CLI sends) gets
the same message as server-sent events, the way the Messages API streams it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FakeAnthropic", "RecordedRequest"]


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict


@dataclass(frozen=True)
class _Script:
    status: int
    body: dict
    delay: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()


def message(text: str, model: str = "claude-sonnet-4-6") -> dict:
    """A Messages API response whose only content block is `text`."""
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def _events(body: dict) -> list[tuple[str, dict]]:
    """A message as the Messages API streams it (message_start … message_stop)."""
    start = {**body, "content": [], "stop_reason": None, "usage": {**body["usage"]}}
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(body["content"]):
        if block["type"] == "tool_use":  # its input streams as JSON text
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opened = {**block, "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opened},
            )
        )
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": body["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def tool_message(name: str, tool_input: object, model: str = "claude-sonnet-4-6") -> dict:
    """A Messages API response whose only content block calls the tool `name`."""
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "tool_use", "id": "toolu_fake", "name": name, "input": tool_input}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 2000, "output_tokens": 200},
    }


class FakeAnthropic:
    """The server; a context manager that starts it on a free port and stops it on exit."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script = _Script(200, message(json.dumps({"selected_memories": []})))
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a stalled handler must not hold up the test
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- scripts ------------------------------------------------------------------------------

    def answer(self, selected: list[str], delay: float = 0.0) -> None:
        """A good answer: `{"selected_memories": selected}` as the text content block, sent
        `delay` seconds after the request arrived."""
        self.answer_text(json.dumps({"selected_memories": selected}), delay)

    def answer_text(self, text: str, delay: float = 0.0) -> None:
        self._set(_Script(200, message(text), delay=delay))

    def propose(self, changes: list[dict], delay: float = 0.0) -> None:
        """A good extraction answer: `propose_memory_changes` called with `changes` (after
        `delay` seconds)."""
        self.answer_tool("propose_memory_changes", {"changes": changes}, delay)

    def answer_tool(self, name: str, tool_input: object, delay: float = 0.0) -> None:
        self._set(_Script(200, tool_message(name, tool_input), delay=delay))

    def overloaded(self) -> None:
        """529, as the API answers when it is overloaded (retry-after-ms keeps the retry quick)."""
        body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        self._set(_Script(529, body, headers=(("retry-after-ms", "10"),)))

    def stall(self, seconds: float) -> None:
        """A good answer, but only after `seconds`: longer than the client waits."""
        self._set(_Script(200, message(json.dumps({"selected_memories": []})), delay=seconds))

    def _set(self, script: _Script) -> None:
        with self._lock:
            self._script = script

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stopping.set()  # wakes stalled handlers
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches to)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                with fake._lock:
                    fake.requests.append(
                        RecordedRequest(
                            self.path, {k.lower(): v for k, v in self.headers.items()}, body
                        )
                    )
                    script = fake._script
                if script.delay and fake._stopping.wait(script.delay):
                    return  # the test is over; nobody is waiting for this answer
                try:
                    if body.get("stream") and script.status == 200:
                        self._stream(script.body)
                    else:
                        self._send(script.status, script.body, script.headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before the answer came

            def do_GET(self) -> None:  # noqa: N802 (a client checking the server is there)
                self._send(200, {}, ())

            do_HEAD = do_GET  # noqa: N815

            def _send(self, status: int, body: dict, headers) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("request-id", "req_fake")
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _stream(self, body: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("request-id", "req_fake")
                self.end_headers()
                for event, data in _events(body):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
                pass

        return Handler
