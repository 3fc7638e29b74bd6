"""Error pages: the site's layout and navigation for people, the API's JSON for agents."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db


def page(response) -> str:
    return response.content.decode()


def test_a_missing_page_has_the_navigation_and_a_way_home(client, alice):
    client.force_login(alice)
    response = client.get("/stores/999/")
    assert response.status_code == 404
    html = page(response)
    assert "<h1>Nothing here</h1>" in html
    assert 'aria-label="Main"' in html and '<a href="/dashboard/">Dashboard</a>' in html
    assert 'href="/">Go to the home page</a>' in html


def test_a_missing_page_offers_the_login_to_a_visitor(client):
    html = page(client.get("/no/such/page/"))
    assert "<h1>Nothing here</h1>" in html and 'href="/login/"' in html
    assert 'aria-label="Main"' not in html


def test_the_api_keeps_its_json_errors(client):
    response = client.get("/api/v1/no/such/thing")
    assert response.status_code in (401, 404)
    assert response["Content-Type"] == "application/json"
    assert set(response.json()["error"]) == {"code", "message", "details"}


@override_settings(ROOT_URLCONF="tests.web.error_urls")
def test_a_crash_shows_the_500_page_with_the_navigation(alice):
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    response = client.get("/crash/")
    assert response.status_code == 500
    html = page(response)
    assert "<h1>Something went wrong on our side</h1>" in html
    assert 'aria-label="Main"' in html


@override_settings(ROOT_URLCONF="tests.web.error_urls")
def test_a_crash_in_the_api_answers_json(alice):
    client = Client(raise_request_exception=False)
    response = client.get("/api/v1/crash")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"


@override_settings(ROOT_URLCONF="tests.web.error_urls")
def test_a_forbidden_page_says_so_in_the_sites_layout(client, alice):
    client.force_login(alice)
    response = client.get("/forbidden/")
    assert response.status_code == 403
    assert "<h1>You may not see this page</h1>" in page(response)


def test_an_expired_form_explains_itself(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post("/rescan/")
    assert response.status_code == 403
    html = page(response)
    assert "<h1>This form has expired</h1>" in html and 'aria-label="Main"' in html
