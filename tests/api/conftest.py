import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from rest_framework.test import APIClient

from memapp.stores.tokens import do_create_api_token


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
