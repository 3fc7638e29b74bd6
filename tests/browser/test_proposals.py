"""The memory lifecycle in Debian's chromium.

The issue's "done when", with the real client: a session in which the person says "remember that
we deploy on Fridays" reaches memhub through the real `memhub-agent hook claude-code stop` (fed a
real transcript), the task worker turns it into a pending proposal, a person approves it in the
browser, and the next session's SessionStart hook gives the agent a prompt that holds it.
Then the queue itself: checks, editing before approving, a conflict shown with both versions,
and the session view and search, at desktop width and at 390 px.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from memapp.lifecycle.models import Proposal, Session
from memapp.lifecycle.proposals import do_propose_changes
from memapp.lifecycle.sessions import check_with_gate
from memapp.memdir.extraction import ProposedChange
from memapp.stores.mirror import rescan_store
from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token
from tests.browser.login import log_in
from tests.browser.screens import DESKTOP, PHONE, fits
from tests.client.conftest import Machine, git_checkout
from tests.conftest import write_memory
from tests.lifecycle.conftest import run_worker
from tests.transcripts import Transcript

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def machine(tmp_path, live_server, alice, settings) -> Machine:
    settings.MEMHUB_DISCOVER = False
    settings.ANTHROPIC_API_KEY = ""  # the offline detector: no key on this machine
    home = tmp_path / "home"
    # This test is about the flow, not the hooks' second (tested in tests/client): a loaded
    # machine must not turn it into a test of patience.
    machine = Machine(home, git_checkout(home / "src" / "widgets"), {"MEMHUB_HOOK_TIMEOUT": "10"})
    _, token = do_create_api_token(alice, "laptop")
    result = machine.run("login", live_server.url, "--token", "-", stdin=token + "\n")
    assert result.returncode == 0, result.stderr
    return machine


def hook(machine: Machine, event: str, transcript: Transcript, path: Path):
    names = {"stop": "Stop", "session-start": "SessionStart"}
    payload = {
        "session_id": transcript.session_id,
        "transcript_path": str(path),
        "cwd": str(machine.checkout),
        "hook_event_name": names[event],
    }
    payload.update({"stop_hook_active": False} if event == "stop" else {"source": "startup"})
    result = machine.hook(event, payload)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_remember_that_we_deploy_on_fridays_reaches_the_next_session(
    live_server, page, screenshot, machine, alice
):
    transcript = Transcript(cwd=str(machine.checkout))
    transcript.turn("The deploy script failed on the migration lock again.", "Retried it.")
    transcript.turn("remember that we deploy on Fridays", "Noted, Fridays it is.")
    folder = machine.home / ".claude" / "projects" / "-home-src-widgets"
    path = transcript.write(folder / f"{transcript.session_id}.jsonl")
    assert hook(machine, "stop", transcript, path) == ""  # a Stop hook prints nothing
    run_worker()
    proposal = Proposal.objects.get()
    assert proposal.status == "pending"

    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    proposals_link = page.locator("nav a[href='/proposals/']")
    assert " ".join(proposals_link.inner_text().split()) == "Proposals1 waiting for you"
    proposals_link.click()
    page.click(f"a[href='/proposals/{proposal.pk}/']")
    page.wait_for_selector("#decide")
    assert "remember that we deploy on Fridays" in page.locator("#source").inner_text()
    screenshot("lifecycle-01-proposal")
    page.set_viewport_size(PHONE)
    screenshot("lifecycle-02-proposal-390")
    page.set_viewport_size(DESKTOP)
    page.click("button[value=approve]")
    page.wait_for_load_state()
    page.wait_for_selector(".message.success")
    assert "Applied: project_friday_deploys.md." in page.inner_text(".messages")
    assert page.locator("nav a[href='/proposals/'] .nav-badge").count() == 0
    screenshot("lifecycle-03-applied")

    following = Transcript(cwd=str(machine.checkout))
    output = hook(machine, "session-start", following, folder / "next.jsonl")
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"]
    assert "[Friday deploys](project_friday_deploys.md)" in context


@pytest.fixture
def queue(alice, alice_client_session):
    store = resolve_store(alice, "acme/widgets", "private")
    write_memory(
        Path(store.path),
        "user_role.md",
        "Role",
        "Alice leads the backend team",
        "user",
        "Alice leads the backend team.\n",
    )
    rescan_store(store)
    session = alice_client_session
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [
            ProposedChange(
                "create",
                "private",
                "project_release.md",
                "Release freeze",
                "The release freeze starts next Thursday",
                "project",
                "The release freeze starts next Thursday.\n",
                "the user mentioned the freeze",
            ),
            ProposedChange(
                "update",
                "private",
                "user_role.md",
                "Role",
                "Alice leads the backend team and reviews migrations",
                "user",
                "Alice leads the backend team.\nShe reviews every migration.\n",
                "the user said she reviews migrations",
            ),
        ],
        sources=[
            {
                "session": session.pk,
                "session_id": session.session_id,
                "from": 1,
                "to": 4,
                "lines": [1, 3],
            }
        ],  # fmt: skip
        sessions=[session],
    )
    return store, proposal


@pytest.fixture
def alice_client_session(alice):
    from memapp.lifecycle.sessions import do_ingest_entries

    store = resolve_store(alice, "acme/widgets", "private")
    t = Transcript()
    t.turn("The release freeze starts next Thursday, keep that in mind.", "Noted.")
    t.turn("Also, I review every migration myself.", "Understood.")
    t.summary("Release freeze and migration reviews")
    do_ingest_entries(alice, store, t.session_id, t.entries)
    check_with_gate(Session.objects.all())
    return Session.objects.get()


def test_the_queue_edit_before_approving_and_a_conflict(live_server, page, screenshot, queue):
    store, proposal = queue
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/proposals/")
    screenshot("lifecycle-04-queue")
    page.set_viewport_size(PHONE)
    screenshot("lifecycle-05-queue-390")
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    create = proposal.changes.get(action="create")
    card = page.locator(f"#change-{create.pk}")
    assert "relative dates" in card.inner_text()
    card.locator("summary").click()
    card.locator(f"#id_body-{create.pk}").fill("The release freeze starts 2026-03-12.\n")
    card.locator(f"#id_description-{create.pk}").fill("The release freeze starts 2026-03-12")
    (Path(store.path) / "user_role.md").write_text(
        "---\nname: Role\ndescription: Alice is the CTO now\ntype: user\n---\nAlice is CTO.\n"
    )
    screenshot("lifecycle-06-editing")
    page.click("button[value=approve]")
    page.wait_for_load_state()
    page.wait_for_selector(".message.error")
    assert "Changed since proposed" in page.inner_text(".messages")
    # All or nothing: the new memory waits too, with the person's edit.
    assert not (Path(store.path) / "project_release.md").exists()
    assert proposal.changes.get(action="create").body == "The release freeze starts 2026-03-12.\n"
    update = proposal.changes.get(action="update")
    conflict = page.locator(f"#change-{update.pk}")
    assert "Alice is CTO." in conflict.inner_text()
    assert "She reviews every migration." in conflict.inner_text()
    screenshot("lifecycle-07-conflict")
    page.set_viewport_size(PHONE)
    screenshot("lifecycle-08-conflict-390")
    page.set_viewport_size(DESKTOP)
    conflict.locator("button", has_text="Review it against the current version").click()
    page.wait_for_selector(f"#change-{update.pk} input[type=checkbox]")
    page.click("button[value=reject]")
    assert page.locator("h1").inner_text() == "Reject this proposal?"  # it asks first
    page.go_back()
    page.click("button[value=approve]")
    page.wait_for_selector(".message.success")
    written = (Path(store.path) / "project_release.md").read_text()
    assert "starts 2026-03-12" in written
    assert Proposal.objects.get().status == "applied"


def test_sessions_and_search_in_the_browser(live_server, page, screenshot, alice_client_session):
    page.set_viewport_size(DESKTOP)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/sessions/")
    page.fill("#past-q", "migration")
    page.click(".past-context-form button[type=submit]")
    page.wait_for_selector("#session-hits")
    assert page.locator("#session-hits mark").first.inner_text().lower() == "migration"
    screenshot("lifecycle-09-search")
    page.click("#session-hits a")
    page.wait_for_selector("ol.entries")
    screenshot("lifecycle-10-session")
    page.set_viewport_size(PHONE)
    screenshot("lifecycle-11-session-390")
    page.click("text=Forget this session")
    page.click("button.danger")
    page.wait_for_selector(".message.success")
    assert not Session.objects.exists()


REVIEW_INDEX = (
    "- [Alpha](alpha.md) — a\n- [Beta](beta.md) — b\n- [Gamma](gamma.md) — c\n"
    "- [Delta](delta.md) — d\n"
)
WHY_HOW = "Zeta first.\n\n**Why:** the outage.\n**How to apply:** every deploy.\n"


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_the_review_after_unticking_and_editing_is_what_approving_writes(
    live_server, page, screenshot, alice, screen
):
    from memapp.lifecycle.models import ProposalChange
    from tests.browser.accessibility import check_accessibility

    store = resolve_store(alice, "acme/widgets", "private")
    root = Path(store.path)
    for name in ("alpha", "beta", "gamma", "delta"):
        write_memory(root, f"{name}.md", name.title(), f"All about {name}", "user", f"{name}\n")
    (root / "MEMORY.md").write_text(REVIEW_INDEX)
    rescan_store(store)
    proposal = do_propose_changes(
        "consolidation",
        store,
        alice,
        [
            ProposedChange(
                "update", "private", "alpha.md", "Alpha", "All about alpha", "user", "α\n"
            ),
            ProposedChange(
                "create",
                "private",
                "epsilon.md",
                "Epsilon",
                "All about epsilon",
                "feedback",
                "E.\n",
            ),
            ProposedChange(
                "update",
                "private",
                "MEMORY.md",
                body=REVIEW_INDEX + "- [Epsilon](epsilon.md) — All about epsilon\n",
            ),
        ],
    )
    ProposalChange.objects.filter(key="MEMORY.md").update(base_text=REVIEW_INDEX)
    epsilon = proposal.changes.get(key="epsilon.md").pk
    page.set_viewport_size(DESKTOP if screen == "desktop" else PHONE)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    after = page.locator("#after-lines .value")
    assert after.inner_text().startswith("5 / 200")

    page.uncheck(f"input[name=changes][value='{epsilon}']")  # htmx redraws the index in place
    expect(after).to_have_text(re.compile(r"^4 /"))
    assert "epsilon.md" not in page.locator("#index-review").inner_text()
    assert "epsilon.md" not in page.locator("#index-change-diff").inner_text()
    screenshot(f"proposal-review-{screen}-1-unticked")
    page.check(f"input[name=changes][value='{epsilon}']")
    expect(after).to_have_text(re.compile(r"^5 /"))

    card = page.locator(f"#change-{epsilon}")
    assert "missing Why and How to apply" in card.inner_text()
    card.locator("summary").click()
    card.locator(f"#id_name-{epsilon}").fill("Zeta rule")
    card.locator(f"#id_description-{epsilon}").fill("Zeta is how we deploy")
    card.locator(f"#id_type-{epsilon}").select_option("project")
    card.locator(f"#id_body-{epsilon}").fill(WHY_HOW)
    page.click("button[value=preview]")
    page.wait_for_selector(f"#change-{epsilon}[data-key='project_zeta_rule.md']")
    card = page.locator(f"#change-{epsilon}")
    assert "missing Why" not in card.inner_text()
    assert "project_zeta_rule.md" in card.locator("header").inner_text()
    shown = page.locator("#index-after").text_content()
    assert shown == REVIEW_INDEX + "- [Zeta rule](project_zeta_rule.md) — Zeta is how we deploy\n"
    screenshot(f"proposal-review-{screen}-2-edited")
    check_accessibility(page, "the proposal review after an edit")
    assert fits(page)

    page.click("button[value=approve]")
    page.wait_for_selector("text=Applied 3 changes")
    assert (root / "MEMORY.md").read_text() == shown
    assert "name: Zeta rule" in (root / "project_zeta_rule.md").read_text()
    assert not (root / "epsilon.md").exists()
