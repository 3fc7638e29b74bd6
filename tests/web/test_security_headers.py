"""The headers every answer carries and the form upload refused before it is read
(docs/design.md §25). The every-page browser walk checks the headers of every page too."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.urls import reverse

from memapp.api.docs import CONTENT_SECURITY_POLICY as API_DOCS_POLICY
from memapp.stores.projects import resolve_store
from memapp.stores.transfer import MAX_UPLOAD_BYTES
from memapp.web.middleware import CONTENT_SECURITY_POLICY
from tests.api.conftest import api_client
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def test_the_policy_refuses_inline_script_and_style():
    directives = dict(part.split(" ", 1) for part in CONTENT_SECURITY_POLICY.split("; "))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY


def test_a_page_shown_before_login_has_the_policy(client):
    response = client.get(reverse("login"))
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert response["X-Frame-Options"] == "DENY"


def test_the_page_that_shows_a_new_token_is_never_stored(client, alice):
    client.login(username="alice", password=PASSWORD)
    response = client.post(reverse("tokens"), {"name": "laptop"})
    assert response.status_code == 200
    assert b"mh_" in response.content
    assert response["Cache-Control"] == "no-store"
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert client.get(reverse("home"))["Cache-Control"] == "no-store"


def test_api_answers_are_never_stored_and_the_api_docs_keep_their_policy(client, alice):
    api = api_client(alice)
    answer = api.get("/api/v1/me")
    assert answer.status_code == 200
    assert answer["Cache-Control"] == "no-store"
    refused = api.get("/api/v1/stores/999/files/x.md")
    assert refused.status_code == 404
    assert refused["Cache-Control"] == "no-store"
    docs = client.get(reverse("api_docs"))
    assert docs["Content-Security-Policy"] == API_DOCS_POLICY


class Unreadable:
    """A request body that fails the test if anything reads it."""

    def read(self, *args):
        raise AssertionError("the body was read")

    readline = read


def test_an_upload_over_the_limit_is_refused_from_its_content_length_unread(client, alice, caplog):
    client.login(username="alice", password=PASSWORD)
    store = resolve_store(alice, "acme/app", "private")
    url = reverse("store_import", args=[store.pk])
    response = client.generic(
        "POST",
        url,
        **{
            "wsgi.input": Unreadable(),
            "CONTENT_LENGTH": str(200 * 1024 * 1024),
            "CONTENT_TYPE": "multipart/form-data; boundary=xyz",
        },
    )
    assert response.status_code == 413
    assert f"At most {MAX_UPLOAD_BYTES // 2**20} MB are accepted" in response.content.decode()
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # a refusal, not a fault


def settings_of(tmp_path, **variables: str) -> list[str]:
    """Django's security settings as memhub reads them from `variables` at start."""
    code = (
        "import memapp.settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_HSTS_SECONDS, getattr(s, 'SECURE_PROXY_SSL_HEADER', None))"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MEMHUB_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env={**env, **variables}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split(maxsplit=3)


def test_tls_settings_are_off_until_asked_for(tmp_path):
    assert settings_of(tmp_path) == ["False", "False", "0", "None\n"]
    assert settings_of(
        tmp_path,
        MEMHUB_SECURE_COOKIES="1",
        MEMHUB_HSTS_SECONDS="31536000",
        MEMHUB_TRUST_PROXY="yes",
    ) == ["True", "True", "31536000", "('HTTP_X_FORWARDED_PROTO', 'https')\n"]


def test_behind_a_trusted_proxy_https_pages_send_hsts(client, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 3600
    response = client.get(reverse("login"), HTTP_X_FORWARDED_PROTO="https")
    assert response["Strict-Transport-Security"] == "max-age=3600"
    assert "Strict-Transport-Security" not in client.get(reverse("login"))
