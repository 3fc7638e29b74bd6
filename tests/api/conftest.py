import pytest
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
