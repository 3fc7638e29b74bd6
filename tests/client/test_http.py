"""The client's HTTP layer: transient failures retried with backoff, errors in the API's shape,
no redirects followed. A scripted HTTP server on 127.0.0.1 plays the server's part; every test
runs on both of the client's routes to it (a plain socket, urllib)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memapp.client.http import NO_RETRY, ApiError, Backoff, Client, NotMemhub, Unreachable

pytestmark = pytest.mark.usefixtures("http_route")


class Scripted:
    """Answers requests with the next (status, body, headers) of a script, and records them."""

    def __init__(self, *answers: tuple[int, object, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": self.rfile.read(length),
                    }
                )
                status, body, headers = outer.answers.pop(0)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                if not isinstance(body, bytes):
                    self.send_header("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted():
    servers: list[Scripted] = []

    def start(*answers) -> Scripted:
        servers.append(Scripted(*answers))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def error(code: str, message: str = "no", details=None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def test_backoff_doubles_from_half_a_second_to_a_cap_of_32_with_a_quarter_of_jitter():
    delays = list(Backoff(attempts=10).delays())

    assert len(delays) == 9
    for delay, nominal in zip(delays, [0.5, 1, 2, 4, 8, 16, 32, 32, 32], strict=True):
        assert nominal * 0.75 <= delay <= nominal * 1.25
    assert list(NO_RETRY.delays()) == []


def test_a_request_carries_the_token_and_json(scripted):
    server = scripted((200, {"ok": True}, {}))

    answer = Client(server.url, "mh_secret").post("/api/v1/recall", {"query": "q"})

    assert answer == {"ok": True}
    request = server.requests[0]
    assert request["method"] == "POST"
    assert request["headers"]["Authorization"] == "Bearer mh_secret"
    assert request["headers"]["Content-Type"] == "application/json"
    assert json.loads(request["body"]) == {"query": "q"}


def test_transient_answers_are_retried_with_backoff(scripted):
    server = scripted(
        (503, error("unavailable"), {}),
        (502, b"<html>bad gateway</html>", {}),
        (200, {"ok": True}, {}),
    )
    slept: list[float] = []

    answer = Client(server.url, "mh_x", sleep=slept.append).get("/api/v1/stores/")

    assert answer == {"ok": True}
    assert len(server.requests) == 3
    assert 0.375 <= slept[0] <= 0.625
    assert 0.75 <= slept[1] <= 1.25


def test_a_throttled_request_waits_as_long_as_the_server_asks(scripted):
    server = scripted((429, error("throttled"), {"Retry-After": "7"}), (200, {}, {}))
    slept: list[float] = []

    Client(server.url, "mh_x", sleep=slept.append).get("/api/v1/stores/")

    assert slept == [7.0]


def test_retries_are_bounded(scripted):
    server = scripted(*[(500, error("server_error", "boom"), {})] * 3)
    slept: list[float] = []
    client = Client(server.url, "mh_x", backoff=Backoff(attempts=3), sleep=slept.append)

    with pytest.raises(ApiError) as raised:
        client.get("/api/v1/stores/")

    assert raised.value.status == 500
    assert raised.value.code == "server_error"
    assert len(server.requests) == 3
    assert len(slept) == 2


def test_errors_that_a_retry_cannot_fix_are_raised_at_once_with_their_details(scripted):
    details = {"entries": [{"key": "a.md", "rule_id": "github-pat", "label": "GitHub", "line": 3}]}
    server = scripted((422, error("secret_detected", "refused: a.md", details), {}))
    slept: list[float] = []

    with pytest.raises(ApiError) as raised:
        Client(server.url, "mh_x", sleep=slept.append).post("/api/v1/stores/1/batch", {})

    assert (raised.value.status, raised.value.code) == (422, "secret_detected")
    assert raised.value.message == "refused: a.md"
    assert raised.value.details == details
    assert slept == []


def test_connection_failures_are_retried_then_reported_as_unreachable(closed_port):
    slept: list[float] = []
    client = Client(
        f"http://127.0.0.1:{closed_port}", "mh_x", backoff=Backoff(attempts=4), sleep=slept.append
    )

    with pytest.raises(Unreachable, match="cannot reach"):
        client.get("/api/v1/stores/")

    assert len(slept) == 3


def test_redirects_are_not_followed(scripted):
    elsewhere = scripted((200, {"stolen": True}, {}))
    server = scripted((302, b"", {"Location": elsewhere.url + "/grab"}))

    with pytest.raises(NotMemhub, match=f"redirects /api/v1/stores/ to {elsewhere.url}/grab"):
        Client(server.url, "mh_secret").get("/api/v1/stores/")

    assert elsewhere.requests == []  # the token went nowhere else


@pytest.mark.parametrize(
    ("status", "body", "headers", "said"),
    [
        (
            200,
            b"<!doctype html><h1>Welcome to nginx</h1>",
            {"Content-Type": "text/html"},
            "an HTML page",
        ),
        (404, b"<html>Not Found</html>", {"Content-Type": "text/html"}, "an HTML page"),
        (401, b"Unauthorized", {"Content-Type": "text/plain"}, "text/plain"),
        (200, b"[1, 2", {"Content-Type": "application/json"}, "application/json"),
    ],
)
def test_a_server_that_is_not_memhub_gets_one_sentence(scripted, status, body, headers, said):
    server = scripted((status, body, headers))

    with pytest.raises(NotMemhub) as raised:
        Client(server.url, "mh_x").get("/api/v1/stores/")

    message = str(raised.value)
    assert message == (
        f"{server.url} does not look like a memhub server: /api/v1/stores/ answered HTTP "
        f"{status} with {said} instead of memhub's JSON (check the URL)"
    )
    assert "<" not in message  # never the page itself


@pytest.mark.parametrize(
    "body, kind",
    [
        (b"<html>Bad Gateway</html>", "text/html"),
        (b'{"message": "no upstream"}', "application/json"),
    ],
)
def test_a_proxys_error_page_is_retried_then_said_in_one_sentence(scripted, body, kind):
    """A proxy's 502 says memhub behind it did not answer, not that the URL is wrong."""
    server = scripted(*[(502, body, {"Content-Type": kind})] * 3)
    slept: list[float] = []

    with pytest.raises(NotMemhub) as raised:
        Client(server.url, "mh_x", backoff=Backoff(attempts=3), sleep=slept.append).get("/x")

    assert len(server.requests) == 3
    assert str(raised.value) == (
        f"{server.url}: /x answered HTTP 502 from something in front of memhub (a proxy or a "
        "load balancer), not from memhub: memhub behind it may be down or starting"
    )


def test_a_server_that_cannot_do_the_request_is_not_asked_again(scripted):
    """A plain web server behind the URL answers a POST with 501: it never will, so no retry."""
    server = scripted((501, b"<html>Unsupported method</html>", {"Content-Type": "text/html"}))
    slept: list[float] = []

    with pytest.raises(NotMemhub, match="answered HTTP 501 with an HTML page"):
        Client(server.url, "mh_x", backoff=Backoff(attempts=3), sleep=slept.append).post("/x", {})

    assert len(server.requests) == 1 and slept == []


def test_total_bounds_a_request_and_its_retries(silent_server):
    started = time.monotonic()
    client = Client(silent_server, "mh_x", timeout=30, total=0.5, backoff=Backoff(attempts=6))

    with pytest.raises(Unreachable):
        client.get("/api/v1/stores/")

    assert time.monotonic() - started < 1.0


def test_each_retry_is_told(scripted):
    server = scripted(
        (503, {"error": {"code": "x", "message": "busy", "details": {}}}, {}), (200, {}, {})
    )
    told: list[str] = []

    Client(server.url, "mh_x", sleep=lambda _: None, on_retry=told.append).get("/x")

    assert len(told) == 1
    assert told[0].startswith("busy [x, HTTP 503]; trying again in ")
    assert told[0].endswith("(attempt 2 of 6)")


def test_a_deadline_bounds_a_silent_server(silent_server):
    started = time.monotonic()
    client = Client(silent_server, "mh_x", backoff=NO_RETRY, deadline=started + 0.3)

    with pytest.raises(Unreachable):
        client.get("/api/v1/stores/")

    assert time.monotonic() - started < 0.6


def test_a_field_missing_from_an_answer_is_not_memhub(scripted):
    server = scripted((200, {"token": {"name": "laptop"}}, {}))
    answer = Client(server.url, "mh_x").get("/api/v1/me")

    with pytest.raises(NotMemhub) as raised:
        answer["token"]["prefix"]  # a nested object knows its answer too

    assert str(raised.value) == (
        f"{server.url} does not look like a memhub server: /api/v1/me answered JSON without "
        "'prefix' (check the URL)"
    )
    assert answer.get("username") is None  # an optional field is read as before


@pytest.mark.parametrize(
    ("value", "kind", "said"),
    [
        ("7", int, "a string where memhub sends an integer"),
        (True, int, "true or false where memhub sends an integer"),
        (None, str, "null where memhub sends a string"),
        ([], dict, "a list where memhub sends an object"),
    ],
)
def test_a_field_of_another_type_is_not_memhub(scripted, value, kind, said):
    server = scripted((200, {"id": value}, {}))
    answer = Client(server.url, "mh_x").get("/x")

    with pytest.raises(NotMemhub, match=f"/x answered 'id' as {said} \\(check the URL\\)$"):
        answer.need("id", kind)


def test_a_field_of_its_type_is_read(scripted):
    server = scripted((200, {"id": 7, "token": {"name": "laptop"}}, {}))
    answer = Client(server.url, "mh_x").get("/x")

    assert answer.need("id", int) == 7
    assert answer.need("token", dict) == {"name": "laptop"}


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (200, [], "JSON that is a list, not an object"),
        (200, None, "JSON that is null, not an object"),
        (200, b"", "HTTP 200 with an empty answer instead of memhub's JSON"),
    ],
)
def test_an_answer_that_is_no_json_object_is_not_memhub(scripted, status, body, said):
    server = scripted((status, body, {"Content-Type": "application/json"}))

    with pytest.raises(NotMemhub, match=f"/x answered {said} \\(check the URL\\)$"):
        Client(server.url, "mh_x").get("/x")


def test_a_204_is_no_answer(scripted):
    """How memhub answers a DELETE (logout's)."""
    server = scripted((204, b"", {}))

    assert Client(server.url, "mh_x").get("/x") is None
