"""Fixtures of the admin pages' tests: one project, acme/app, where alice (an admin) and bob are
members; each has a private store, and the project has a team store. charlie is an outsider and
sam is staff without being a member."""

from __future__ import annotations

import re
from html import unescape
from types import SimpleNamespace

import pytest
from django.test import Client

from memapp.stores.models import Project
from memapp.stores.projects import resolve_store


@pytest.fixture(autouse=True)
def offline(settings):
    """No Anthropic key unless a test sets one."""
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def acme(alice, bob) -> SimpleNamespace:
    alice_private = resolve_store(alice, "acme/app", "private")
    team = resolve_store(alice, "acme/app", "team")
    project = Project.objects.get(key="acme/app")
    project.members.add(bob)
    bob_private = resolve_store(bob, "acme/app", "private")
    return SimpleNamespace(
        project=project, alice_private=alice_private, bob_private=bob_private, team=team
    )


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text(response) -> str:
    """The page as a person reads it: tags dropped, entities decoded, whitespace collapsed."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", response.content.decode(), flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())
