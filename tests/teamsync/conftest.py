"""Fixtures for team sync: a shared bare remote, a project with a managed team store, and a
teammate on another machine (the git engine alone, with its own clone and store)."""

from __future__ import annotations

import signal

import pytest

from memapp.stores.models import Project
from memapp.stores.projects import resolve_store
from tests.teamsync.gitutil import Member, make_bare


@pytest.fixture(autouse=True)
def keep_signal_handlers():
    """The task worker (`db_worker`) installs SIGTERM/SIGINT/SIGQUIT handlers; give pytest its
    own back."""
    signals = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
    saved = {sig: signal.getsignal(sig) for sig in signals}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.fixture
def remote(tmp_path, settings):
    """The shared team repository, used by this memhub and every teammate."""
    bare = make_bare(tmp_path / "team.git")
    settings.MEMHUB_TEAM_REMOTE = str(bare)
    return bare


@pytest.fixture
def project(alice, bob):
    project = Project.objects.create(key="acme/app")
    project.members.add(alice, bob)
    return project


@pytest.fixture
def team_store(project, alice, remote):
    """acme/app's team store, kept by memhub in its data dir (for agents using the API)."""
    return resolve_store(alice, "acme/app", "team")


@pytest.fixture
def dora(tmp_path, remote):
    """A teammate whose machine syncs the same folder of the same remote."""
    return Member(tmp_path / "elsewhere", "dora", remote)
