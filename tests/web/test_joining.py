"""Staff create projects and invite people; an invitation works once, until it expires or is
withdrawn, and lands the new member on Connect your agent."""

from __future__ import annotations

import re
import socket
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone

from memapp.stores.models import Invitation, Project
from memapp.stores.tokens import authenticate_token, do_create_api_token
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-long-new-password-9"


def _invite(client, **data) -> str:
    """The invitation link the People page shows once."""
    page = client.post("/people/", data).content.decode()
    return re.search(r'data-copy="the invitation link">(http[^<]+)</pre>', page)[1]


def _accept(client, link: str, username: str = "dana"):
    return client.post(
        link,
        {
            "username": username,
            "name": "Dana Scully",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
        },
    )


def test_staff_create_a_project_and_a_bad_key_is_refused(client, sam):
    client.login(username="sam", password=PASSWORD)
    response = client.post("/projects/new/", {"key": "acme/widgets"}, follow=True)
    assert "Created the project acme/widgets" in response.content.decode()
    assert Project.objects.filter(key="acme/widgets").exists()

    for bad in ("../etc", "acme/widgets", "two words"):
        page = client.post("/projects/new/", {"key": bad})
        assert page.status_code == 200
        assert 'class="errorlist' in page.content.decode()
    assert Project.objects.count() == 1


def test_members_cannot_invite_or_create_projects(client, bob):
    client.login(username="bob", password=PASSWORD)
    assert client.get("/people/").status_code == 404
    assert client.post("/people/", {"email": "x@example.com"}).status_code == 404
    assert client.post("/projects/new/", {"key": "acme/x"}).status_code == 404
    assert not Invitation.objects.exists() and not Project.objects.exists()


def test_without_a_mail_server_the_page_says_nothing_was_mailed(client, sam, settings):
    client.force_login(sam)
    settings.EMAIL_HOST = ""
    page = client.post("/people/", {"email": "dana@example.com"}).content.decode()
    assert "nothing was mailed to dana@example.com: send them the link below" in page
    assert "Invitation mailed" not in page
    settings.EMAIL_HOST = "smtp.example.com"
    page = client.post("/people/", {"email": "erin@example.com"}).content.decode()
    assert "Invitation mailed to erin@example.com." in page


def test_an_emailed_invitation_makes_a_member_who_lands_on_connect(client, sam):
    project = Project.objects.create(key="acme/widgets")
    client.login(username="sam", password=PASSWORD)
    link = _invite(client, email="dana@example.com", projects=[project.pk])
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["dana@example.com"]
    assert link in mail.outbox[0].body
    assert "dana@example.com" in client.get("/people/").content.decode()  # waiting
    client.logout()

    page = client.get(link).content.decode()
    assert "acme/widgets" in page
    response = _accept(client, link)
    assert response["Location"] == "/connect/"
    dana = get_user_model().objects.get(username="dana")
    assert dana.email == "dana@example.com" and dana.get_full_name() == "Dana Scully"
    assert list(project.members.all()) == [dana]
    connect = client.get("/connect/").content.decode()
    assert "memhub-agent login http://testserver" in connect
    assert "memhub-agent install claude-code" in connect
    client.force_login(sam)
    assert "dana@example.com" not in client.get("/people/").content.decode()


def test_a_reused_invitation_is_refused_and_makes_no_account(client, sam):
    client.force_login(sam)
    link = _invite(client)
    client.logout()
    assert _accept(client, link).status_code == 302
    client.logout()

    response = _accept(client, link, username="eve")
    assert response.status_code == 410
    assert "already used" in response.content.decode()
    assert not get_user_model().objects.filter(username="eve").exists()


def test_an_expired_invitation_is_refused_and_makes_no_account(client, sam):
    client.force_login(sam)
    link = _invite(client)
    client.logout()
    Invitation.objects.update(expires_at=timezone.now() - timedelta(minutes=1))

    response = _accept(client, link)
    assert response.status_code == 410
    assert "expired" in response.content.decode()
    assert client.get(link).status_code == 410
    assert not get_user_model().objects.filter(username="dana").exists()


def test_a_withdrawn_invitation_is_refused_and_makes_no_account(client, sam):
    client.force_login(sam)
    link = _invite(client, email="dana@example.com")
    invitation = Invitation.objects.get()
    client.post(f"/people/invitations/{invitation.pk}/revoke/")
    client.logout()

    response = _accept(client, link)
    assert response.status_code == 410
    assert "withdrawn" in response.content.decode()
    assert not get_user_model().objects.filter(username="dana").exists()


def test_a_wrong_link_is_refused(client):
    response = client.get("/join/not-a-real-secret/")
    assert response.status_code == 410
    assert "not valid" in response.content.decode()


def test_a_taken_username_or_a_weak_password_keeps_the_invitation_usable(client, sam, bob):
    client.force_login(sam)
    link = _invite(client)
    client.logout()
    assert "taken" in _accept(client, link, username="bob").content.decode()
    weak = client.post(
        link, {"username": "dana", "password1": "abc", "password2": "abc"}
    ).content.decode()
    assert "too short" in weak
    assert Invitation.objects.get().pending
    assert _accept(client, link).status_code == 302


@pytest.mark.parametrize("username", ["\u0430dmin", "ADM\u0130N", "bo\u0432"])
def test_a_username_that_looks_like_anothers_is_refused(client, sam, bob, username):
    """A Cyrillic а or a dotted İ makes a name no one can tell from bob's or an admin's in
    the history and the events."""
    client.force_login(sam)
    link = _invite(client)
    client.logout()
    page = _accept(client, link, username=username).content.decode()
    assert "Enter a valid username" in page
    assert Invitation.objects.get().pending
    assert not get_user_model().objects.filter(username=username).exists()


def test_home_offers_to_connect_until_the_agent_calls_in(client, bob):
    client.force_login(bob)
    page = client.get("/").content.decode()
    assert 'id="connect"' in page and "memhub-agent login http://testserver" in page

    _, token = do_create_api_token(bob, "laptop")
    authenticate_token(token, "memhub-agent/0.1")
    page = client.get("/").content.decode()
    assert 'id="connect"' not in page
    connect = client.get("/connect/").content.decode()
    assert "last seen" in connect and "memhub-agent/0.1" in connect


INVITE_BY_MAIL = """
import re
import socket
from django.contrib.auth import get_user_model
from django.test import Client

get_user_model().objects.create_user("sam", password="a long password 1", is_staff=True)
client = Client(HTTP_HOST="localhost", raise_request_exception=False)  # the 500 a person sees
client.login(username="sam", password="a long password 1")
answer = client.post("/people/", {"email": "dana@example.com"})
page = answer.content.decode()
print(answer.status_code)
print("link shown" if re.search(r'data-copy="the invitation link">http', page) else "no link")
print(re.search(r"The mail to dana@example.com could not be sent[^:]*: send them the link", page)
      and "said so" or "silent")
"""


def test_a_mail_server_that_refuses_leaves_the_link_to_copy(tmp_path):
    """As started from the environment with MEMHUB_EMAIL_HOST (the tests' own mail goes to a
    list in memory and never fails): a mail server that refused the connection was an error
    page, and the invitation it had made waited with its link, shown once, lost."""
    from tests.migrated import migrate
    from tests.test_env import manage

    migrate(tmp_path)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"MEMHUB_EMAIL_HOST": "127.0.0.1", "MEMHUB_EMAIL_PORT": str(port)}
    result = manage(tmp_path, "shell", "--no-imports", "-c", INVITE_BY_MAIL, **env)
    assert result.stdout.splitlines() == ["200", "link shown", "said so"], result.stderr[-2000:]
