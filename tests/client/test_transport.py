"""The bytes on the wire (`memapp.client.transport`): a request to a local `http://` server goes
on a plain socket, or through urllib when a proxy is configured, and the client sees the same
answers and the same failures either way. A server on 127.0.0.1 writes each answer's raw bytes,
so every framing HTTP allows is read as a real server would send it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from memapp.client.http import NO_RETRY, ApiError, Client, NotMemhub, Unreachable

BODY = json.dumps({"memories": [{"path": "a.md", "content": "é" * 40}]}).encode()


class RawServer:
    """Answers each connection with the next raw answer of a script, and keeps the requests
    (their head and body as bytes); an answer of None holds the connection without a word."""

    def __init__(self, answers: list[bytes | None], family: int = socket.AF_INET) -> None:
        self.answers = answers
        self.requests: list[bytes] = []
        self.listener = socket.socket(family)
        self.listener.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        self.listener.listen(8)
        port = self.listener.getsockname()[1]
        host = "[::1]" if family == socket.AF_INET6 else "127.0.0.1"
        self.url = f"http://{host}:{port}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.requests.append(self._request(connection))
            answer = self.answers.pop(0)
            if answer is None:
                self.held.append(connection)
                continue
            with connection:
                connection.sendall(answer)

    @staticmethod
    def _request(connection: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            body += connection.recv(65536)
        return head + b"\r\n\r\n" + body

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


@pytest.fixture
def raw_server() -> Iterator:
    servers: list[RawServer] = []

    def start(*answers: bytes | None, family: int = socket.AF_INET) -> RawServer:
        servers.append(RawServer(list(answers), family))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def answer(status: str, headers: list[str], body: bytes = b"") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\n{''.join(h + chr(13) + chr(10) for h in headers)}\r\n".encode()
        + body
    )


def chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    coded = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in parts)
    return coded + b"0\r\nX-Trailer: done\r\n\r\n"


JSON = "Content-Type: application/json"
FRAMINGS = {
    "content-length": answer("200 OK", [JSON, f"Content-Length: {len(BODY)}"], BODY),
    "chunked": answer("200 OK", [JSON, "Transfer-Encoding: chunked"], chunked(BODY)),
    "until closed": answer("200 OK", [JSON, "Connection: close"], BODY),
    "after 100 continue": answer("100 Continue", [])
    + answer("200 OK", [JSON, f"Content-Length: {len(BODY)}"], BODY),
    "http/1.0, folded and repeated headers": (
        b"HTTP/1.0 200 OK\r\nContent-Type: application/\r\n json\r\nContent-Type: text/html\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
    ),
}


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_every_framing_of_an_answer_is_read_whole(raw_server, http_route, framing):
    server = raw_server(FRAMINGS[framing])

    assert Client(server.url, "mh_x").get("/api/v1/recall") == json.loads(BODY)


@pytest.mark.parametrize("framing", ["Transfer-Encoding: chunked", "Content-Length"])
def test_a_large_answer_is_read_whole(raw_server, http_route, framing):
    large = json.dumps({"files": {f"f{n}.md": "x" * 1000 for n in range(1000)}}).encode()
    if framing == "Content-Length":
        raw = answer("200 OK", [JSON, f"Content-Length: {len(large)}"], large)
    else:
        raw = answer("200 OK", [JSON, framing], chunked(large, size=4096))
    server = raw_server(raw)

    assert Client(server.url, "mh_x").get("/api/v1/pull") == json.loads(large)


def test_the_request_carries_its_host_token_and_body(raw_server, http_route):
    server = raw_server(answer("200 OK", [JSON, "Content-Length: 2"], b"{}"))

    Client(server.url, "mh_secret").request(
        "POST", "/api/v1/recall?x=1", {"query": "q"}, headers={"If-Match": '"v1"'}
    )

    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    line, *fields = head.decode().split("\r\n")
    headers = {name.lower(): value for name, _, value in (f.partition(": ") for f in fields)}
    assert line == "POST /api/v1/recall?x=1 HTTP/1.1"
    assert headers["host"] == server.url.removeprefix("http://")
    assert headers["authorization"] == "Bearer mh_secret"
    assert headers["content-type"] == "application/json"
    assert headers["if-match"] == '"v1"'
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    assert json.loads(body) == {"query": "q"}


def test_an_ipv6_server_is_reached(raw_server, http_route):
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    try:
        server = raw_server(FRAMINGS["chunked"], family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")

    assert Client(server.url, "mh_x").get("/x") == json.loads(BODY)


def test_not_modified_has_no_body_to_wait_for(raw_server, http_route):
    server = raw_server(answer("304 Not Modified", ['ETag: "v1"', "Content-Length: 99"]), None)

    with pytest.raises(ApiError) as raised:
        Client(server.url, "mh_x", timeout=5).get("/api/v1/stores/1/index")

    assert (raised.value.status, raised.value.code) == (304, "not_modified")


def test_a_chunked_error_and_a_redirect_are_reported_as_before(raw_server, http_route):
    error = json.dumps({"error": {"code": "nope", "message": "No.", "details": {}}}).encode()
    server = raw_server(
        answer("403 Forbidden", [JSON, "Transfer-Encoding: chunked"], chunked(error)),
        answer("301 Moved", ["Location: https://elsewhere.example/x", "Content-Length: 0"]),
    )
    client = Client(server.url, "mh_x", backoff=NO_RETRY)

    with pytest.raises(ApiError) as raised:
        client.get("/x")
    with pytest.raises(NotMemhub, match="redirects /x to https://elsewhere.example/x"):
        client.get("/x")

    assert (raised.value.status, raised.value.code, raised.value.message) == (403, "nope", "No.")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "Remote end closed connection without response"),
        (
            answer("200 OK", [JSON, "Content-Length: 20"], b'{"a": '),
            "IncompleteRead(6 bytes read, 14 more expected)",
        ),
    ],
    ids=["no answer", "cut short"],
)
def test_a_broken_answer_is_unreachable_in_the_same_words(raw_server, http_route, raw, reason):
    server = raw_server(raw)

    with pytest.raises(Unreachable) as raised:
        Client(server.url, "mh_x", backoff=NO_RETRY).get("/x")

    assert str(raised.value) == f"cannot reach {server.url}: {reason}"


def test_a_refused_connection_and_a_timeout_are_said_the_same_way(
    raw_server, closed_port, http_route
):
    silent = raw_server(None)
    refused = f"http://127.0.0.1:{closed_port}"

    with pytest.raises(Unreachable) as refusal:
        Client(refused, "mh_x", backoff=NO_RETRY).get("/x")
    with pytest.raises(Unreachable) as timeout:
        Client(silent.url, "mh_x", timeout=0.2, backoff=NO_RETRY).get("/x")

    assert str(refusal.value) == f"cannot reach {refused}: [Errno 111] Connection refused"
    assert str(timeout.value) == f"cannot reach {silent.url}: timed out"


@pytest.mark.parametrize("name", ["http_proxy", "HTTP_PROXY"])
def test_a_configured_proxy_carries_the_request_unless_no_proxy_says_otherwise(
    raw_server, monkeypatch, name
):
    for variable in ["http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY", "REQUEST_METHOD"]:
        monkeypatch.delenv(variable, raising=False)
    ok = answer("200 OK", [JSON, "Content-Length: 2"], b"{}")
    proxy, server = raw_server(ok), raw_server(ok)
    monkeypatch.setenv(name, proxy.url)

    Client(server.url, "mh_x").get("/x")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    Client(server.url, "mh_x").get("/y")

    assert proxy.requests[0].startswith(f"GET {server.url}/x HTTP/1.1\r\n".encode())
    assert server.requests[0].startswith(b"GET /y HTTP/1.1\r\n")
    assert len(proxy.requests) == len(server.requests) == 1


def test_a_request_on_a_plain_socket_loads_no_urllib(raw_server):
    """What the socket route is for: a hook pays for none of urllib's modules."""
    server = raw_server(FRAMINGS["content-length"])
    code = (
        "import sys\n"
        "from memapp.client.http import Client\n"
        f"assert Client({server.url!r}, 'mh_x').get('/x')\n"
        "heavy = {'urllib.request', 'http.client', 'email', 'ssl', 'encodings.idna', 'socket'}\n"
        "loaded = sorted(heavy & set(sys.modules))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin"}
    )

    assert result.returncode == 0, result.stderr
