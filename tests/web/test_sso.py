"""Single sign-on against a small OpenID provider on 127.0.0.1: an account is made (or linked
by email) on the first sign-in; a wrong audience, an expired or badly signed id token, an
unverified email or a foreign domain signs nobody in and makes no account."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages

from memapp.stores.invitations import do_create_invitation
from memapp.stores.models import Project
from tests.conftest import PASSWORD
from tests.web.oidc_provider import CLIENT_ID, CLIENT_SECRET, _key, start_provider

pytestmark = pytest.mark.django_db


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def provider(settings):
    provider, server = start_provider()
    settings.MEMHUB_OIDC_ISSUER = provider.url
    settings.MEMHUB_OIDC_CLIENT_ID = CLIENT_ID
    settings.MEMHUB_OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.AUTHENTICATION_BACKENDS = [  # as memapp.settings makes them
        "memapp.web.login_throttle.LoginThrottleBackend",
        "memapp.web.sso.SSOBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    yield provider
    server.shutdown()


def _sign_in(client, provider):
    """Follow the flow as a browser does: memhub → the provider → memhub's callback."""
    start = client.get("/sso/start/")
    assert start.status_code == 302 and start["Location"].startswith(f"{provider.url}/authorize?")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(start["Location"])
    except urllib.error.HTTPError as redirect:
        callback = redirect.headers["Location"]
    assert callback.startswith("http://testserver/sso/callback/?")
    return client.get(callback.removeprefix("http://testserver"))


def _said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def test_the_first_sign_in_makes_the_account_and_accepts_its_invitations(client, provider, sam):
    project = Project.objects.create(key="acme/widgets")
    do_create_invitation(sam, [project], "Dana@example.com")
    assert "Sign in with single sign-on" in client.get("/login/").content.decode()

    response = _sign_in(client, provider)
    assert response.status_code == 302 and response["Location"] == "/"
    dana = get_user_model().objects.get(email="dana@example.com")
    assert dana.username == "dana" and dana.get_full_name() == "Dana Scully"
    assert not dana.has_usable_password()
    assert list(project.members.all()) == [dana]
    assert provider.pkce_checked == 1
    home = client.get("/")
    assert home.status_code == 200  # signed in
    # Her account has no password to change: her name is no link to a form she cannot use.
    assert 'href="/profile/password/"' not in home.content.decode()
    assert '<span class="who">dana</span>' in home.content.decode()

    client.logout()
    _sign_in(client, provider)
    assert get_user_model().objects.filter(email="dana@example.com").count() == 1


def test_an_existing_account_is_linked_by_email_and_the_staff_group_maps(
    client, provider, settings, bob
):
    bob.email = "dana@example.com"
    bob.save()
    settings.MEMHUB_OIDC_STAFF_GROUP = "memhub-admins"
    provider.userinfo["groups"] = ["memhub-admins"]
    _sign_in(client, provider)
    bob.refresh_from_db()
    assert bob.is_staff
    assert int(client.session["_auth_user_id"]) == bob.pk


def test_the_staff_claim_is_configurable_and_followed_at_each_sign_in(
    client, provider, settings, bob
):
    bob.email = "dana@example.com"
    bob.save()
    settings.MEMHUB_OIDC_STAFF_GROUP = "memhub-admins"
    settings.MEMHUB_OIDC_STAFF_CLAIM = "realm_access.roles"
    provider.userinfo["groups"] = ["memhub-admins"]  # not the claim asked for: not staff
    provider.userinfo["realm_access"] = {"roles": ["developer"]}
    _sign_in(client, provider)
    bob.refresh_from_db()
    assert not bob.is_staff

    provider.userinfo["realm_access"] = {"roles": ["developer", "memhub-admins"]}
    client.logout()
    _sign_in(client, provider)
    bob.refresh_from_db()
    assert bob.is_staff

    settings.MEMHUB_OIDC_STAFF_CLAIM = "role"  # one string
    provider.userinfo["role"] = "developer"
    client.logout()
    _sign_in(client, provider)
    bob.refresh_from_db()
    assert not bob.is_staff  # left the group at the provider: no longer staff here


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"token_claims": {"aud": "someone-else"}}, "Audience"),
        ({"token_claims": {"exp": int(time.time()) - 60}}, "expired"),
        ({"signing_key": _key()}, "Signature verification failed"),
        ({"userinfo": {"email_verified": False}}, "not verified"),
        ({"token_claims": {"iss": "https://evil.example"}}, "issuer"),
    ],
    ids=["wrong-audience", "expired", "bad-signature", "unverified-email", "wrong-issuer"],
)
def test_a_bad_id_token_or_claim_signs_nobody_in(client, provider, change, said):
    for name, value in change.items():
        if name == "userinfo":
            provider.userinfo.update(value)
        elif name == "token_claims":
            provider.token_claims.update(value)
        else:
            setattr(provider, name, value)
    response = _sign_in(client, provider)
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert said.lower() in _said(response).lower()
    assert "_auth_user_id" not in client.session
    assert not get_user_model().objects.exists()


def test_a_foreign_domain_is_refused(client, provider, settings):
    settings.MEMHUB_OIDC_ALLOWED_DOMAINS = ["acme.example"]
    response = _sign_in(client, provider)
    assert "not of an allowed domain" in _said(response)
    assert not get_user_model().objects.exists()


def test_passwords_can_be_turned_off(client, provider, settings, bob):
    settings.MEMHUB_PASSWORD_LOGIN = False
    page = client.get("/login/").content.decode()
    assert "Sign in with single sign-on" in page and 'name="password"' not in page
    response = client.post("/login/", {"username": "bob", "password": PASSWORD})
    assert response.status_code == 404
    assert "_auth_user_id" not in client.session


def test_without_an_issuer_there_is_no_single_sign_on(client):
    assert "single sign-on" not in client.get("/login/").content.decode()
    assert client.get("/sso/start/").status_code == 404
    assert client.get("/sso/callback/?code=x&state=y").status_code == 404


def test_with_passwords_off_an_invitation_is_accepted_through_single_sign_on(
    client, provider, settings, sam
):
    settings.MEMHUB_PASSWORD_LOGIN = False
    project = Project.objects.create(key="acme/widgets")
    _, secret = do_create_invitation(sam, [project], "dana@example.com")
    page = client.get(f"/join/{secret}/").content.decode()
    assert "Sign in with single sign-on" in page and 'name="password1"' not in page
    _sign_in(client, provider)
    assert project.members.get().email == "dana@example.com"


SIGN_IN_AT_THE_ADMIN = """
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

get_user_model().objects.create_superuser("sam", password="a long password 1")
client = Client(HTTP_HOST="localhost")
answer = client.post(
    "/admin/login/?next=/admin/", {"username": "sam", "password": "a long password 1"}
)
print("signed in" if "_auth_user_id" in client.session else "refused")
print("sso" if "memapp.web.sso.SSOBackend" in settings.AUTHENTICATION_BACKENDS else "no sso")
"""


@pytest.mark.parametrize(
    ("passwords", "said"), [("0", ["refused", "sso"]), ("1", ["signed in", "sso"])]
)
def test_the_settings_keep_single_sign_on_and_passwords_off_means_off_everywhere(
    tmp_path, passwords, said
):
    """As started from the environment, not as the other tests set them: the login
    throttle's list of backends once replaced the one these settings make, so single sign-on
    signed nobody in (its backend was gone) and with MEMHUB_PASSWORD_LOGIN=0 the admin's
    login page still took staff's passwords."""
    from tests.test_env import manage

    env = {
        "MEMHUB_OIDC_ISSUER": "https://sso.example.com",
        "MEMHUB_OIDC_CLIENT_ID": CLIENT_ID,
        "MEMHUB_PASSWORD_LOGIN": passwords,
        "MEMHUB_DISCOVER": "0",
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
    }
    assert manage(tmp_path, "migrate", **env).returncode == 0
    result = manage(tmp_path, "shell", "--no-imports", "-c", SIGN_IN_AT_THE_ADMIN, **env)
    assert result.stdout.splitlines() == said, result.stderr


SIGN_IN_FROM_EACH_ADDRESS = """
import os
import urllib.error
import urllib.request

from django.test import Client


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


for address in os.environ["ADDRESSES"].split():
    client = Client(HTTP_HOST="localhost", REMOTE_ADDR=address)
    start = client.get("/sso/start/")
    try:
        urllib.request.build_opener(NoRedirect).open(start["Location"])
    except urllib.error.HTTPError as redirect:
        callback = redirect.headers["Location"].removeprefix("http://localhost")
    answer = client.get(callback)
    print("signed in" if "_auth_user_id" in client.session else answer.status_code)
"""


def test_refused_sign_ins_lock_their_address_not_everyone(tmp_path):
    """As started from the environment, the login throttle's backend included (the other
    tests leave it out): single sign-on names no username, so its refusals were counted for
    the one username they all lack, and five from anywhere (an unverified email, another
    domain) locked single sign-on for everyone, from every address."""
    from tests.migrated import migrate
    from tests.test_env import manage

    provider, server = start_provider()
    env = {
        "MEMHUB_OIDC_ISSUER": provider.url,
        "MEMHUB_OIDC_CLIENT_ID": CLIENT_ID,
        "MEMHUB_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "MEMHUB_DISCOVER": "0",
    }
    migrate(tmp_path)

    def sign_in_from(*addresses: str) -> list[str]:
        script = SIGN_IN_FROM_EACH_ADDRESS
        result = manage(
            tmp_path, "shell", "--no-imports", "-c", script, ADDRESSES=" ".join(addresses), **env
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout.splitlines()

    try:
        provider.userinfo.update(email="mallory@elsewhere.example", email_verified=False)
        strangers = [f"203.0.113.{n}" for n in range(1, 7)]
        assert sign_in_from(*strangers) == ["302"] * 6  # each refused, none locked out
        provider.userinfo.update(email="dana@example.com", email_verified=True)
        assert sign_in_from("198.51.100.9") == ["signed in"]
        provider.userinfo.update(email_verified=False)
        assert sign_in_from(*["192.0.2.1"] * 5) == ["302"] * 4 + ["429"]  # one address: its wait
    finally:
        server.shutdown()
