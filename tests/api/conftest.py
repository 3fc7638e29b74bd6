import json
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.http import HttpRequest
from django.test import RequestFactory
from rest_framework.test import APIClient

from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token
from tests.conftest import write_memory

RECALL, PROMPT = "/api/v1/recall", "/api/v1/prompt"
GOOD = {"project": "acme/app", "query": "which database do the integration tests use"}


def agent_request(
    path: str, method: str = "POST", body=None, raw: bytes | None = None, **headers
) -> HttpRequest:
    """A request to recall or the prompt as an agent sends it (JSON; the usual body unless
    `body` or `raw` is given), built anew for each view or handler: a body is read once."""
    factory = RequestFactory()
    if method == "GET":
        return factory.get(path, body or {}, **headers)
    if raw is None:
        if body is None:
            body = GOOD if path.startswith(RECALL) else {"project": "acme/app"}
        raw = json.dumps(body).encode()
    content_type = headers.pop("content_type", "application/json")
    # Set even for an empty body (RequestFactory leaves it out), as clients send it.
    headers.setdefault("CONTENT_TYPE", content_type)
    return factory.generic(method, path, raw, content_type=content_type, **headers)


def answer(app, variables: dict) -> tuple[str, list[tuple[str, str]], bytes]:
    """A WSGI app's answer to `variables`, read as a server reads it: status, headers, body."""
    started = {}

    def start_response(status, headers, exc_info=None):
        started["status"], started["headers"] = status, headers

    result = app(variables, start_response)
    try:
        body = b"".join(result)
    finally:
        if hasattr(result, "close"):  # as a WSGI server does (a list has nothing to close)
            result.close()
    return started["status"], sorted(started["headers"]), body


def api_client(user) -> APIClient:
    _, token = do_create_api_token(user, "test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def alice_api(alice):
    return api_client(alice)


@pytest.fixture
def bob_api(bob):
    return api_client(bob)


@pytest.fixture
def sam_api(sam):
    return api_client(sam)


@pytest.fixture
def in_process_requests():
    """Requests go straight to the WSGI app: like Django's test client, keep the request
    signals from closing the test's connection (inside its transaction) after each one."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def testing_memory(alice):
    """Alice's private store of acme/app, holding one memory about integration tests."""
    store = resolve_store(alice, "acme/app", "private")
    write_memory(
        Path(store.path),
        "feedback_testing.md",
        "Integration tests use a real database",
        "Integration tests must hit a real database, not mocks",
        "feedback",
    )
    return store


@pytest.fixture
def token(alice, testing_memory) -> str:
    """A token of Alice's agent, whose memory of acme/app is `testing_memory`."""
    return do_create_api_token(alice, "agent")[1]
