"""The proposals queue, sessions and past-context search as pages (without JavaScript): the
count in the navigation, per-file diffs and checks, approve selected with edits, reject,
conflicts with both versions, forgetting a session after asking; everyone else gets a 404."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from memapp.lifecycle.models import ExtractionRun, Proposal, Session
from memapp.lifecycle.proposals import do_propose_changes
from memapp.lifecycle.sessions import check_with_gate
from memapp.memdir.extraction import ProposedChange
from memapp.stores.mirror import rescan_store
from memapp.stores.projects import resolve_store
from tests.admin_ui.conftest import client_for, text
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT, upload
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice_api) -> Session:
    t = Transcript()
    t.turn("The deploy failed again", "Looking at the logs.")
    t.turn("remember that we deploy on Fridays", "Noted.")
    upload(alice_api, t)
    check_with_gate(Session.objects.all())
    return Session.objects.get()


@pytest.fixture
def proposal(alice, session) -> Proposal:
    store = resolve_store(alice, PROJECT, "private")
    write_memory(Path(store.path), "user_role.md", "Role", "Alice leads backend", "user", "Lead.\n")
    rescan_store(store)
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [
            ProposedChange(
                "create",
                "private",
                "project_deploys.md",
                "Deploy day",
                "We deploy on Fridays",
                "project",
                "We deploy next Friday.\n",
                "the user asked",
            ),
            ProposedChange(
                "update",
                "private",
                "user_role.md",
                "Role",
                "Alice leads the backend team",
                "user",
                "Alice leads the backend team since 2026.\n",
                "she said so",
            ),
        ],
        sources=[
            {
                "session": session.pk,
                "session_id": session.session_id,
                "from": 1,
                "to": 4,
                "lines": [3],
            }
        ],  # fmt: skip
        sessions=[session],
    )
    return proposal


def nav(response) -> str:
    return re.search(r"<nav\b.*?</nav>", response.content.decode(), re.S).group(0)


def test_the_navigation_counts_what_waits_for_you(alice, bob, proposal):
    count = r'Proposals<span class="nav-badge">1<span class="visually-hidden"> waiting for you'
    assert re.search(count, nav(client_for(alice).get("/")))
    assert "Proposals<span" not in nav(client_for(bob).get("/"))


def test_the_queue_lists_pending_proposals_and_says_what_needs_a_key(alice, proposal, settings):
    settings.ANTHROPIC_API_KEY = ""
    page = text(client_for(alice).get(reverse("proposals")))
    assert "Waiting for you (1)" in page
    assert "create project_deploys.md" in page and "update user_role.md" in page
    assert "Everything else a model would notice needs a key" in page
    settings.ANTHROPIC_API_KEY = "sk-test"
    assert "needs a key" not in text(client_for(alice).get(reverse("proposals")))


def test_only_staff_see_the_missing_key_as_something_to_fix(bob, settings):
    """A member cannot set the key: they get a neutral note, not a red banner."""
    settings.ANTHROPIC_API_KEY = ""
    response = client_for(bob).get(reverse("proposals"))
    assert 'id="no-key"' not in response.content.decode() and "No API key" not in text(response)
    assert "once an administrator gives it a model key" in text(response)


def test_a_failed_run_is_shown_with_its_reason(alice, proposal):
    ExtractionRun.objects.create(
        store=proposal.store,
        owner=alice,
        status="failed",
        outcome="failed",
        attempts=2,
        error="OverloadedError: Overloaded",
    )
    page = text(client_for(alice).get(reverse("proposals")))
    assert "acme/widgets failed 0 0 OverloadedError: Overloaded after 2 attempts" in page


def test_a_proposal_shows_its_source_diffs_and_checks(alice, proposal):
    response = client_for(alice).get(reverse("proposal", kwargs={"proposal_id": proposal.pk}))
    page = text(response)
    assert "#3 user remember that we deploy on Fridays" in page
    assert "relative dates: “next Friday”" in page
    assert "missing Why and How to apply" in page or "missing Why" in page
    html = response.content.decode()
    assert '<th colspan="2">Now</th><th colspan="2">Proposed</th>' in html
    assert "Proposed (new file)" in html
    assert "Alice leads the backend team since 2026." in html
    assert html.count('type="checkbox" name="changes"') == 2


def test_approving_the_ticked_changes_with_an_edit(alice, proposal):
    create = proposal.changes.get(action="create")
    update = proposal.changes.get(action="update")
    url = reverse("proposal", kwargs={"proposal_id": proposal.pk})
    client = client_for(alice)
    response = client.post(
        url,
        {
            "decision": "approve",
            "changes": [str(create.pk)],
            f"name-{create.pk}": "Release day",
            f"description-{create.pk}": "Releases go out on Fridays",
            f"body-{create.pk}": "Releases go out on Fridays (2026-03-06 was the first).\r\n",
        },
    )
    assert response.status_code == 302
    written = (Path(proposal.store.path) / "project_release_day.md").read_text()
    assert "name: Release day" in written
    assert "Releases go out on Fridays (2026-03-06 was the first).\n" in written
    update.refresh_from_db()
    assert update.status == "skipped"
    page = text(client.get(url))
    assert "Applied: project_release_day.md." in page


def test_approving_nothing_ticked_asks_for_a_tick(alice, proposal):
    url = reverse("proposal", kwargs={"proposal_id": proposal.pk})
    page = text(client_for(alice).post(url, {"decision": "approve"}))
    assert "Tick the changes to approve." in page
    assert Proposal.objects.get().status == "pending"


def test_rejecting_asks_first_and_writes_nothing(alice, proposal):
    url = reverse("proposal", kwargs={"proposal_id": proposal.pk})
    client = client_for(alice)
    page = text(client.post(url, {"decision": "reject"}))
    assert "Reject this proposal?" in page and "Keep it open" in page
    assert Proposal.objects.get().status == "pending"
    assert client.post(url, {"decision": "reject", "sure": "yes"}).status_code == 302
    assert Proposal.objects.get().status == "rejected"
    assert not (Path(proposal.store.path) / "project_deploys.md").exists()


def test_a_conflict_shows_both_versions_and_can_be_taken_up_again(alice, proposal):
    role = Path(proposal.store.path) / "user_role.md"
    role.write_text("---\nname: Role\ndescription: Alice, CTO\ntype: user\n---\nCTO now.\n")
    client = client_for(alice)
    url = reverse("proposal", kwargs={"proposal_id": proposal.pk})
    ids = [str(c.pk) for c in proposal.changes.all()]
    client.post(url, {"decision": "approve", "changes": ids})
    page = client.get(url).content.decode()
    assert "changed since it was proposed" in page
    assert "CTO now." in page and "Alice leads the backend team since 2026." in page
    assert "CTO now." in role.read_text()
    update = proposal.changes.get(action="update")
    rebase = reverse("change_rebase", kwargs={"change_id": update.pk})
    assert client.post(rebase).status_code == 302
    update.refresh_from_db()
    assert update.status == "pending"


def test_sessions_and_their_entries(alice, session):
    page = text(client_for(alice).get(reverse("sessions")))
    assert "The deploy failed again" in page
    html = client_for(alice).get(reverse("session", kwargs={"session_pk": session.pk}))
    assert 'id="e3"' in html.content.decode()
    assert "remember that we deploy on Fridays" in text(html)


def test_forgetting_a_session_asks_first(alice, session):
    client = client_for(alice)
    url = reverse("session_forget", kwargs={"session_pk": session.pk})
    assert "Forget this session?" in text(client.get(url))
    assert Session.objects.exists()
    assert client.post(url).status_code == 302
    assert not Session.objects.exists()


def test_past_context_search_page(alice, session):
    page = client_for(alice).get(reverse("past_context"), {"q": "deploy Fridays"})
    html = page.content.decode()
    assert "<mark>deploy</mark>" in html and "<mark>Fridays</mark>" in html
    assert f'href="/sessions/{session.pk}/#e3"' in html
    assert "Nothing matches" in text(client_for(alice).get(reverse("past_context"), {"q": "zz"}))


def test_everyone_else_gets_a_404(bob, sam, proposal, session):
    change = proposal.changes.first()
    urls = [
        (reverse("proposal", kwargs={"proposal_id": proposal.pk}), "get"),
        (reverse("session", kwargs={"session_pk": session.pk}), "get"),
        (reverse("session_forget", kwargs={"session_pk": session.pk}), "post"),
        (reverse("change_rebase", kwargs={"change_id": change.pk}), "post"),
    ]
    for user in (bob, sam):  # sam is staff: staff status grants nothing here
        client = client_for(user)
        for url, method in urls:
            assert getattr(client, method)(url).status_code == 404, (user, url)
        found = text(client.get(reverse("past_context"), {"q": "deploy"}))
        assert "Nothing matches deploy or any of its words" in found
    assert Session.objects.exists()


def test_each_session_and_proposal_says_which_agent_it_came_from(alice, proposal, session):
    """docs/design.md §28: the agent a session's transcript came from, on the sessions list,
    the session page, the queue and the proposal page."""
    Session.objects.filter(pk=session.pk).update(agent="gemini-cli")
    client = client_for(alice)
    assert "Gemini CLI" in text(client.get(reverse("sessions")))
    assert "Agent Gemini CLI" in text(
        client.get(reverse("session", kwargs={"session_pk": session.pk}))
    )
    assert "Gemini CLI" in text(client.get(reverse("proposals")))
    assert "Gemini CLI" in text(
        client.get(reverse("proposal", kwargs={"proposal_id": proposal.pk}))
    )
    Session.objects.filter(pk=session.pk).update(agent="claude-code")
    assert "Gemini CLI" not in text(client.get(reverse("proposals")))
    assert "Claude Code" in text(client.get(reverse("proposals")))
