"""The HTTP server's own part (memapp/http_server.py): where it listens, and that the server's
environment, which granian copies into every request's variables, never reaches the app."""

from __future__ import annotations

import argparse
import ipaddress
import json

import pytest

from memapp.http_server import _application, bind_address
from memapp.stores.tokens import do_create_api_token
from tests.api.conftest import GOOD, RECALL, agent_request, answer


def test_a_name_is_listened_on_at_its_address():
    host, port = bind_address("localhost:8000")
    assert ipaddress.ip_address(host).is_loopback and port == 8000
    assert bind_address("[::1]:9000") == ("::1", 9000)
    assert bind_address("0.0.0.0:80") == ("0.0.0.0", 80)


@pytest.mark.parametrize("value", ["8000", ":8000", "localhost:http"])
def test_an_address_that_is_not_one_is_refused_with_its_reason(value):
    with pytest.raises(argparse.ArgumentTypeError):
        bind_address(value)


@pytest.mark.django_db
@pytest.mark.usefixtures("in_process_requests")
def test_a_token_in_the_servers_environment_authenticates_nothing(alice, monkeypatch, settings):
    """granian adds the server's environment to each request's variables: a variable named
    like a header (here `HTTP_AUTHORIZATION`) must not pass for one the client sent, and the
    header a client does send still counts."""
    settings.ANTHROPIC_API_KEY = ""
    _row, token = do_create_api_token(alice, "agent")
    _row, other = do_create_api_token(alice, "script")
    monkeypatch.setenv("HTTP_AUTHORIZATION", f"Bearer {token}")
    served = _application()

    def recall(authorization: str | None) -> tuple[str, dict]:
        variables = agent_request(RECALL, body=GOOD).environ
        # What granian hands the app: the server's environment, the request's own over it.
        variables = {"HTTP_AUTHORIZATION": f"Bearer {token}", **variables}
        if authorization:
            variables["HTTP_AUTHORIZATION"] = authorization
        status, _headers, body = answer(served, variables)
        return status, json.loads(body)

    status, body = recall(None)
    assert status.startswith("401") and body["error"]["code"] == "unauthorized"
    status, body = recall(f"Bearer {other}")
    assert status.startswith("200") and "memories" in body
