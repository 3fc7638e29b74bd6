"""`memhub-agent mcp` over stdio, driven by the SDK's own stdio client, against a live memhub."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from mcp import Client, StdioServerParameters

from memapp.stores.actions import do_save_memory
from memapp.stores.projects import resolve_store
from tests.client.conftest import AGENT, SLUG
from tests.mcp.conftest import run_client

pytestmark = pytest.mark.django_db(transaction=True)


def over_stdio(machine, work):
    params = StdioServerParameters(
        command=str(AGENT), args=["mcp"], env=machine.env, cwd=str(machine.checkout)
    )

    async def run():
        async with Client(params) as client:
            return await work(client)

    return run_client(run)


def test_the_stdio_server_recalls_for_the_project_of_the_working_directory(
    server, machine_a, alice
):
    machine_a.login(server)
    store = resolve_store(alice, SLUG, "private")
    do_save_memory(
        store,
        alice,
        name="Deploys",
        description="How deploys work",
        memory_type="project",
        body="Deploys go out on Tuesdays through the release train.\n",
    )

    async def work(client):
        tools = await client.list_tools()
        first = await client.call_tool("recall", {"query": "when do deploys go out?"})
        again = await client.call_tool("recall", {"query": "when do deploys go out?"})
        return tools, first, again

    tools, first, again = over_stdio(machine_a, work)
    assert {t.name for t in tools.tools} == {"recall", "search", "memory", "log", "proposals"}
    assert "Tuesdays" in first.content[0].text
    # One process is one session: a memory is shown once.
    assert "Tuesdays" not in again.content[0].text


def test_without_a_login_every_request_says_so(machine_a):
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    result = machine_a.run("mcp", stdin=json.dumps(message) + "\n")
    answer = json.loads(result.stdout)
    assert answer["id"] == 7
    assert "not logged in; run `memhub-agent login` first" in answer["error"]["message"]


def test_it_is_ready_to_answer_within_300_ms(server, machine_a):
    machine_a.login(server)
    start = time.monotonic()
    process = subprocess.Popen(
        [str(AGENT), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=machine_a.env,
        cwd=machine_a.checkout,
    )
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    elapsed = machine_a.without_load(time.monotonic() - start)
    process.stdin.close()
    process.wait(10)
    assert answer["id"] == 1 and "result" in answer, answer
    assert elapsed < 0.3 + 0.2, elapsed  # 300 ms on a quiet machine (the benchmark); room here


@pytest.fixture
def odd_servers():
    """A server that redirects every POST to a second one, which notes the Authorization
    header it is sent, and a proxy that answers 502 with an empty body."""
    import http.server
    import threading

    seen: list[str | None] = []

    class Thief(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            body = b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET

        def log_message(self, *args):
            pass

    thief = http.server.HTTPServer(("127.0.0.1", 0), Thief)

    class Odd(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            if not self.path.startswith("/mcp/proxy/"):
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{thief.server_port}/login")
            else:
                self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    odd = http.server.HTTPServer(("127.0.0.1", 0), Odd)
    for each in (thief, odd):
        threading.Thread(target=each.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{odd.server_port}", seen
    for each in (thief, odd):
        each.shutdown()


def test_a_redirect_is_not_followed_and_every_request_gets_an_answer(odd_servers):
    """urllib followed a 302 with the token to wherever it pointed; a 3xx or an error with no
    JSON-RPC body left the agent waiting for an answer that never came."""
    import io

    from memapp.client.mcp_stdio import Relay

    url, seen = odd_servers
    answers = []
    for project in (SLUG, "proxy/widgets"):
        out = io.StringIO()
        Relay(url, "mh_secret", project, out).relay({"jsonrpc": "2.0", "id": 1, "method": "x"})
        [answer] = [json.loads(line) for line in out.getvalue().splitlines()]
        assert answer["id"] == 1
        answers.append(answer["error"]["message"])
    assert seen == []  # the token went nowhere else
    assert "a redirect to http://127.0.0.1:" in answers[0] and "not followed" in answers[0]
    assert answers[1].startswith("memhub at ") and answers[1].endswith(" answered HTTP 502")
