"""Every page of the site, as its owner would see it, in light and dark mode, on a desktop and
on a 390 px phone: the security headers are there (a strict Content-Security-Policy the page
keeps to, no console saying otherwise, and `Cache-Control: no-store`), axe finds no critical
or serious violation (every rule at both widths but the rules the colours decide, which run on
the desktop in light and in dark mode: a page's colours are those of every width, its markup
and layout those of light mode), nothing is wider than the screen (nor than a 360 px one), and
a screenshot of each in each mode is saved for a person to look at.

A new page needs one line in `pages()`; a new URL that only takes POST goes in POST_ONLY.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from django.urls import URLPattern, reverse

from memapp.api.docs import CONTENT_SECURITY_POLICY as API_DOCS_POLICY
from memapp.lifecycle.models import Proposal, Session
from memapp.memdir.agent_snapshots import MARKER_FILENAME
from memapp.memdir.paths import sanitize_path
from memapp.stores.actions import do_forget_memory, do_save_memory
from memapp.stores.device_auth import do_start_device_authorization
from memapp.stores.discovery import discover_local_stores
from memapp.stores.flags import set_flag
from memapp.stores.invitations import do_create_invitation
from memapp.stores.models import ApiToken, Store
from memapp.stores.tokens import do_create_api_token
from memapp.web import urls as web_urls
from memapp.web.middleware import CONTENT_SECURITY_POLICY
from snapshots.actions import do_register_checkout
from snapshots.models import Checkout
from teamsync.models import BlockedFile, TeamConflict
from tests.browser.accessibility import (
    ALSO_ENFORCED,
    COLOUR_RULES,
    accessibility_violations,
    chart_colour_contrasts,
    describe,
    preload_axe,
)
from tests.browser.login import log_in
from tests.browser.screens import ARTIFACTS, SCREENS, fits
from tests.conftest import write_memory
from tests.snapshots.conftest import LOCAL, SNAPSHOT, T1, T2, write_files, write_snapshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# URLs that only take a form's POST: each is reached from a page below, never shown itself.
POST_ONLY = {
    "rescan",
    "store_rescan",
    "rebuild_index",
    "memory_lint",
    "memory_preview",
    "memory_share",
    "memory_version_restore",
    "trash_restore",
    "store_bulk",
    "token_reinstate",
    "token_renew",
    "member_remove",
    "project_identity",
    "project_merge",
    "sync_held",
    "invitation_revoke",
    "flag_clear",
    "sync_now",
    "checkout_register",
    "checkout_rescan",
    "checkout_remove",
    "change_rebase",
    "consolidate_now",
    "logout",
}
# URLs that answer htmx with a part of a page listed below (the store page's consolidation card).
FRAGMENTS = {"consolidation_panel"}
# URLs that answer with a file to download, not a page.
DOWNLOADS = {"store_export"}
# URLs that only redirect: single sign-on's way to the identity provider and back.
REDIRECTS = {"sso_start", "sso_callback"}
# URLs pip reads, not people: the site's package index of memhub-agent (tests/web).
PACKAGE_INDEX = {"client_index", "client_project", "client_wheel"}


@pytest.fixture
def site(memory_base, alice, tmp_path, monkeypatch):
    """Alice's discovered stores with something on every page: a project named by its
    checkout's repo, a link to a memory not written yet, a conflict and a blocked file in
    team sync, a pending snapshot update."""
    app = tmp_path / "src" / "app"
    subprocess.run(["git", "init", "-q", str(app)], check=True)
    subprocess.run(
        ["git", "-C", str(app), "remote", "add", "origin", "git@github.com:acme/app.git"],
        check=True,
    )
    project_dir = memory_base / "projects" / sanitize_path(str(app))
    (memory_base / "projects" / "-home-alice-app").rename(project_dir)
    private = project_dir / "memory"
    write_memory(
        private,
        "reference_wiki.md",
        "Team wiki",
        "The team wiki lives at wiki.example.com/backend",
        "reference",
        "Runbooks are under **Ops**. See [[Real DB]] and [[deploy-checklist]].\n",
    )
    with (private / "MEMORY.md").open("a") as index:
        index.write("- [Team wiki](reference_wiki.md) — where docs live\n")
    # A 612-character description, most of it one unbroken string: it wraps, never widens.
    long = "Build logs: https://ci.example.com/" + "a1b2c3d4" * 70 + " (kept for the audit)"
    write_memory(private, "reference_build_logs.md", "Build logs", long[:612], "reference")
    repo = tmp_path / "src" / "widgets"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/widgets.git"],
        check=True,
    )
    write_snapshot(repo, "reviewer", T2, SNAPSHOT)
    agent = write_files(memory_base / "agent-memory" / "reviewer", LOCAL)
    (agent / MARKER_FILENAME).write_text(json.dumps({"syncedFrom": T1}))
    discover_local_stores(memory_base)
    checkout = do_register_checkout(alice, repo)
    team = Store.objects.get(kind="team")
    TeamConflict.objects.create(
        store=team,
        key="project_release.md",
        kind="edit",
        base="Freeze on 2026-03-05.\n",
        ours="Freeze on 2026-03-06.\n",
        theirs="Freeze on 2026-03-07.\n",
    )
    BlockedFile.objects.create(
        store=team,
        key="secrets.md",
        reason="secret",
        hits=[{"rule_id": "github-pat", "label": "GitHub token", "line": 3}],
    )
    # A line of a file the team repository lacks, holding a token: no agent gets the index,
    # and the team store's page says which line.
    token = "ghp_" + "Zx8Cv7Bn6Mq5Wr4Et3Yu2Io1Pa9Sd8Fg7Hj6"
    with (Path(team.path) / "MEMORY.md").open("a") as index:
        index.write(f"- [Runner](runner.md) — its token is {token}\n")
    set_flag("recall_max", 4, user=alice, note="recalls were noisy")
    lifecycle_history(alice)
    private_store = Store.objects.get(kind="private")
    do_save_memory(
        private_store,
        alice,
        name="Team wiki",
        description="The wiki moved to docs.example.com",
        memory_type="reference",
        body="Runbooks are under **Ops**.\n",
        path="reference_wiki.md",
    )
    do_forget_memory(private_store, alice, "user_role.md")
    do_create_api_token(alice, "laptop")
    consolidation_history(alice)
    do_create_invitation(alice, [team.project], "dana@example.com")
    return checkout


def lifecycle_history(alice) -> None:
    """A session with a secret redacted, a failed extraction run and a proposal whose update
    is a conflict, so the lifecycle pages show each of their parts."""
    from memapp.lifecycle.models import ExtractionRun, Session
    from memapp.lifecycle.proposals import do_apply_proposal, do_propose_changes
    from memapp.lifecycle.sessions import check_with_gate, do_ingest_entries
    from memapp.memdir.extraction import ProposedChange
    from tests.transcripts import Transcript

    store = Store.objects.get(kind="private")
    t = Transcript()
    t.turn("The deploy failed with a migration lock timeout", "Retrying the migration.")
    call = t.tool_use("Bash", {"command": "env | grep DB"})
    t.tool_result(call, 'DB_PASSWORD="%Tq8!vR2zLx9#kQ"')
    t.turn("remember that we deploy on Fridays", "Noted.")
    t.summary("Deploy failures and the deploy day")
    do_ingest_entries(alice, store, t.session_id, t.entries)
    check_with_gate(Session.objects.all())
    session = Session.objects.get()
    ExtractionRun.objects.create(
        store=store, owner=alice, status="failed", outcome="failed", attempts=2,
        error="OverloadedError: Overloaded",
    )  # fmt: skip
    changes = [
        ProposedChange("create", "private", "user_we_deploy_on_fridays.md", "We deploy on Fridays",
                       "We deploy on Fridays", "user", "We deploy on Fridays.\n", "asked"),
        ProposedChange("update", "private", "reference_wiki.md", "Team wiki",
                       "The team wiki lives at wiki.example.com/backend (moved from Confluence)",
                       "reference", "Runbooks are under **Ops**.\n", "the wiki moved"),
    ]  # fmt: skip
    sources = [{"session": session.pk, "session_id": session.session_id, "from": 1, "to": 7,
                "lines": [6]}]  # fmt: skip
    proposal = do_propose_changes(
        "extraction", store, alice, changes, sources=sources, sessions=[session]
    )
    wiki = Path(store.path) / "reference_wiki.md"
    wiki.write_text(wiki.read_text() + "Edited by hand meanwhile.\n")
    do_apply_proposal(proposal, alice, [proposal.changes.get(action="update").pk])


def consolidation_history(alice) -> None:
    """Daily-log entries, a project memory with a relative date and a dangling index entry,
    then "Consolidate now": a distillation and a consolidation proposal to review."""
    from tests.lifecycle.conftest import consolidate_now
    from tests.lifecycle.untidy import plant_distillation_and_consolidation

    store = Store.objects.get(kind="private")
    plant_distillation_and_consolidation(Path(store.path))
    consolidate_now(store, alice)


def pages(checkout: Checkout) -> dict[str, str]:
    """Each page by its URL name: the path a person opens."""
    private = Store.objects.get(kind="private")
    conflict = TeamConflict.objects.get()
    target = "reviewer"
    versions = list(private.versions.filter(path="reference_wiki.md").order_by("-id"))
    _, invitation = do_create_invitation(None, [private.project], "erin@example.com")
    device, _ = do_start_device_authorization("dana-laptop", "memhub-agent/0.1")
    return {
        "home": reverse("home"),
        "search": reverse("search") + "?q=wiki",
        "store": reverse("store", args=[private.pk]),
        "team_store": reverse("store", args=[Store.objects.get(kind="team").pk]),
        "store_health": reverse("store_health", args=[private.pk]),
        "memory_create": reverse("memory_create", args=[private.pk]),
        "memory_edit": reverse("memory_edit", args=[private.pk, "reference_wiki.md"]),
        "memory_forget": reverse("memory_forget", args=[private.pk, "reference_wiki.md"]),
        "memory": reverse("memory", args=[private.pk, "reference_wiki.md"]),
        "tokens": reverse("tokens"),
        "dashboard": reverse("dashboard"),
        "events": reverse("events"),
        "settings": reverse("settings"),
        "flag": reverse("flag", args=["recall_max"]),
        "sync": reverse("sync"),
        "sync_conflict": reverse("sync_conflict", args=[conflict.pk]),
        "snapshot_list": reverse("snapshot_list"),
        "snapshot_review": reverse("snapshot_review", args=[checkout.pk, target, "user"]),
        "proposals": reverse("proposals"),
        "proposal": reverse("proposal", args=[Proposal.objects.get(kind="extraction").pk]),
        "consolidation": reverse("proposal", args=[Proposal.objects.get(kind="consolidation").pk]),
        "distillation": reverse("proposal", args=[Proposal.objects.get(kind="distillation").pk]),
        "daily_logs": reverse("daily_logs", args=[private.pk]),
        "consolidation_cancel": reverse("consolidation_cancel", args=[private.pk]),
        "sessions": reverse("sessions"),
        "session": reverse("session", args=[Session.objects.get().pk]),
        "session_forget": reverse("session_forget", args=[Session.objects.get().pk]),
        "past_context": reverse("past_context") + "?q=deploy",
        "memory_history": reverse("memory_history", args=[private.pk, "reference_wiki.md"])
        + f"?a={versions[1].pk}&b={versions[0].pk}",
        "index_history": reverse("memory_history", args=[private.pk, "MEMORY.md"]),
        "memory_version": reverse(
            "memory_version", args=[private.pk, "reference_wiki.md", versions[0].pk]
        ),
        "trash": reverse("trash", args=[private.pk]),
        "trash_all": reverse("trash_all"),
        "store_import": reverse("store_import", args=[private.pk]),
        "recall_preview": reverse("recall_preview")
        + f"?project={private.pk}&query=where+is+the+wiki&tools=Bash&scope=both",
        "token_revoke": reverse("token_revoke", args=[ApiToken.objects.get().pk]),
        "projects": reverse("projects"),
        "project_members": reverse("project_members", args=[private.project_id]),
        "password_change": reverse("password_change"),
        "password_change_done": reverse("password_change_done"),
        "project_create": reverse("project_create"),
        "people": reverse("people"),
        "connect": reverse("connect"),
        "device": reverse("device") + f"?code={device.user_code}",
        "accept_invitation": reverse("accept_invitation", args=[invitation]),
        "login": reverse("login"),
    }


def test_every_page_is_listed_here():
    """A page someone adds to memapp/web/urls.py is checked once it is listed above."""
    names = {p.name for p in web_urls.urlpatterns if isinstance(p, URLPattern)}
    listed = {
        "home",
        "search",
        "store",
        "store_health",
        "memory_create",
        "memory_edit",
        "memory_forget",
        "memory",
        "tokens",
        "dashboard",
        "events",
        "settings",
        "flag",
        "sync",
        "sync_conflict",
        "snapshot_list",
        "snapshot_review",
        "proposals",
        "proposal",
        "sessions",
        "session",
        "session_forget",
        "past_context",
        "memory_history",
        "memory_version",
        "trash",
        "trash_all",
        "store_import",
        "recall_preview",
        "token_revoke",
        "consolidation_cancel",
        "projects",
        "project_members",
        "password_change",
        "password_change_done",
        "daily_logs",
        "project_create",
        "people",
        "connect",
        "device",
        "accept_invitation",
        "login",
    }
    assert names - POST_ONLY - FRAGMENTS - DOWNLOADS - REDIRECTS - PACKAGE_INDEX == listed


def header_problems(name: str, headers: dict[str, str]) -> list[str]:
    """What a page's headers lack (docs/design.md §25): the site's strict policy (the API docs
    their own), and `no-store` on every page of a signed-in person."""
    problems = []
    policy = headers.get("content-security-policy", "")
    expected = API_DOCS_POLICY if name == "api_docs" else CONTENT_SECURITY_POLICY
    if policy != expected:
        problems.append(f"{name}: Content-Security-Policy {policy!r}")
    if name != "login" and headers.get("cache-control") != "no-store":
        problems.append(f"{name}: Cache-Control {headers.get('cache-control')!r}")
    for header, value in (("x-frame-options", "DENY"), ("x-content-type-options", "nosniff")):
        if headers.get(header) != value:
            problems.append(f"{name}: {header} {headers.get(header)!r}")
    return problems


def page_problems(page, name: str) -> list[str]:
    """What a person met on one page (issue 25's rough edges), checked where it was seen."""
    problems = []
    if name == "store":
        order = page.eval_on_selector_all("main section.card", "cards => cards.map(c => c.id)")
        if order[:2] != ["memories", "index"]:
            problems.append(f"store: the memories are not the first card: {order}")
    if name == "team_store" and not page.locator("#index-withheld li").count():
        problems.append("team_store: no notice naming the line that keeps the index from agents")
    if name == "sync":  # the heading after the fields has room above it
        gap = page.evaluate(
            "(() => { const h = [...document.querySelectorAll('main h2')].find("
            "e => e.textContent === 'Team stores'); const dl = h.previousElementSibling;"
            " return h.getBoundingClientRect().top - dl.getBoundingClientRect().bottom; })()"
        )
        if gap < 16:
            problems.append(f"sync: 'Team stores' is {gap}px under the fields")
    if name == "memory_history":  # the current row is one band, not boxes around its cells
        cells = page.eval_on_selector_all(
            "table.versions tr.current td",
            "tds => tds.map(td => getComputedStyle(td).backgroundColor)",
        )
        if any(c != "rgba(0, 0, 0, 0)" for c in cells):
            problems.append(f"memory_history: the current row's cells have backgrounds {cells}")
    if name == "api_docs":
        problems += api_docs_problems(page)
    return problems


def api_docs_problems(page) -> list[str]:
    """The API docs keep the site's navigation, say their title once, show real answers and a
    search box inside the sidebar that stays light, as the page does, in dark mode too."""
    problems = []
    if page.locator("header.topbar nav[aria-label=Main]").count() != 1:
        problems.append("api_docs: no site navigation")
    if (title := page.locator("h1").first.inner_text()) != "memhub agent API":
        problems.append(f"api_docs: titled {title!r}")
    # The first operation's answer was Redoc's `{"property1": null, "property2": null}`.
    if not page.get_by_text('"organizationId"').count():
        problems.append("api_docs: no real response sample for the team memory")
    box = page.evaluate(
        "(() => { const i = document.querySelector('input.search-input').getBoundingClientRect();"
        " const m = document.querySelector('.menu-content').getBoundingClientRect();"
        " return [i.left - m.left, m.right - i.right]; })()"
    )
    if min(box) < 0:
        problems.append(f"api_docs: the search box sticks out of the sidebar by {box}")
    page.emulate_media(color_scheme="dark")
    colours = page.evaluate(
        "(() => { const i = getComputedStyle(document.querySelector('input.search-input'));"
        " return [i.backgroundColor, i.color,"
        " getComputedStyle(document.querySelector('main')).backgroundColor]; })()"
    )
    page.emulate_media(color_scheme="light")
    if colours != ["rgba(0, 0, 0, 0)", "rgb(51, 51, 51)", "rgb(255, 255, 255)"]:
        problems.append(f"api_docs: search box and page in dark mode: {colours}")
    return problems


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_every_page_is_accessible_and_fits(live_server, page, site, screen):
    page.set_viewport_size(SCREENS[screen])
    preload_axe(page.context)
    log_in(page, live_server)
    urls = pages(site)
    login = urls.pop("login")
    urls |= {"api_docs": reverse("api_docs"), "not_found": "/stores/999999/", "login": login}
    ARTIFACTS.mkdir(exist_ok=True)
    problems = []
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    for name, url in urls.items():
        if name == "login":
            page.context.clear_cookies()
        page.emulate_media(color_scheme="light")
        console.clear()
        response = page.goto(f"{live_server.url}{url}")
        assert response.status == (404 if name == "not_found" else 200), name
        problems += header_problems(name, response.all_headers())
        if name != "api_docs":
            # htmx runs under the policy: it loaded, and added no <style> the policy refused.
            assert page.evaluate("typeof htmx") == "object", name
        if name == "api_docs":
            page.wait_for_selector("h1")
        if name == "home":
            assert page.locator("main section.card h2").first.inner_text() == "acme/app"
        problems += page_problems(page, name)
        # Redoc's own markup skips heading levels: there only critical and serious count.
        enforced = frozenset() if name == "api_docs" else ALSO_ENFORCED
        for scheme, only in (("light", ()), ("dark", COLOUR_RULES)):
            page.emulate_media(color_scheme=scheme)  # the page follows without a reload
            shot = ARTIFACTS / f"every-{screen}-{scheme}-{name}.jpg"
            # Dark mode changes colours, not layout: its shot is the screen, not the page.
            # JPEG: 180 shots, some 19,000 px tall, cost a third less to encode than PNG.
            page.screenshot(path=str(shot), type="jpeg", quality=85, full_page=scheme == "light")
            # A page's colours are the same at every width: the colour rules run on the
            # desktop in both modes, and on the phone on home alone, for what only the phone
            # shows (its menu, on every page). The other rules run at both widths.
            colours = screen == "desktop" or name == "home"
            if scheme == "dark" and not colours:
                continue
            without = () if colours else COLOUR_RULES
            if violations := accessibility_violations(
                page, enforced=enforced, only=only, without=without
            ):
                problems.append(f"axe on {name} ({scheme}):\n{describe(violations)}")
            if name == "dashboard":
                contrasts = chart_colour_contrasts(page)
                assert len(contrasts) >= 8, contrasts  # admin.css's chart classes were found
                if faint := {c: round(r, 2) for c, r in contrasts.items() if r < 3}:
                    problems.append(f"chart colours under 3:1 in {scheme} mode: {faint}")
        # The API docs' policy refuses Redoc's logo from its vendor's CDN on purpose.
        refused = [text for text in console if "Content Security Policy" in text]
        if name == "api_docs":
            refused = [text for text in refused if "cdn.redoc.ly" not in text]
        if refused:
            problems.append(f"{name} broke the Content-Security-Policy: {refused}")
        if not fits(page):
            problems.append(f"{name} is wider than the {screen} screen")
        if screen == "phone":  # the narrowest phones in use
            page.set_viewport_size({"width": 360, "height": 740})
            if not fits(page):
                problems.append(f"{name} is wider than a 360 px screen")
            page.set_viewport_size(SCREENS[screen])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "nojs"])
def test_the_phone_menu_opens_with_or_without_javascript(live_server, browser, site, javascript):
    context = browser.new_context(viewport=SCREENS["phone"], java_script_enabled=javascript)
    page = context.new_page()
    try:
        log_in(page, live_server)
        nav = page.locator("nav[aria-label=Main]")
        assert not nav.is_visible()
        page.click("summary:has-text('Menu')")
        assert nav.is_visible()
        names = [" ".join(n.split()) for n in page.locator(".nav-list a").all_inner_texts()[:4]]
        assert names[:2] == ["Home", "Search"] and names[2].startswith("Proposals")
        assert names[3] == "Sessions"
        assert page.locator(".nav-list a:has-text('API tokens')").is_visible()  # no "More"
        assert not page.locator("nav summary:has-text('More')").is_visible()
        page.screenshot(
            path=str(ARTIFACTS / f"every-phone-menu-open-{'js' if javascript else 'nojs'}.png")
        )
        page.click(".nav-list a:has-text('Dashboard')")
        page.wait_for_url("**/dashboard/")
        assert fits(page)
    finally:
        context.close()


@pytest.mark.parametrize(
    ("width", "javascript"), [(1280, True), (1280, False), (1101, True)], ids=["js", "nojs", "1101"]
)
def test_the_desktop_shows_the_navigation_on_one_line_and_the_rest_under_more(
    live_server, browser, site, width, javascript
):
    """From 1,101 px (below, the phone's menu) the navigation is one line with every badge."""
    viewport = {**SCREENS["desktop"], "width": width}
    context = browser.new_context(viewport=viewport, java_script_enabled=javascript)
    page = context.new_page()
    try:
        log_in(page, live_server)
        assert page.locator("nav[aria-label=Main]").is_visible()
        assert not page.locator("summary:has-text('Menu')").is_visible()
        tops = page.eval_on_selector_all(
            ".nav-list > li", "items => items.map(i => Math.round(i.getBoundingClientRect().top))"
        )
        assert len(tops) == 8 and len(set(tops)) == 1, tops  # admin alice: one line
        tokens = page.locator("nav a:has-text('API tokens')")
        assert not tokens.is_visible()
        page.click("nav summary:has-text('More')")
        if javascript:  # Escape closes it, as a menu does, and leaves focus on "More"
            page.keyboard.press("Escape")
            assert not page.locator(".nav-more details").evaluate("d => d.open")
            assert page.evaluate("document.activeElement.textContent") == "More"
            page.click("nav summary:has-text('More')")
        names = page.locator(".nav-more a").all_inner_texts()
        assert names == [
            "Try recall",
            "Events",
            "Trash",
            "API tokens",
            "API docs",
            "Projects",
            "People",
            "Settings",
            "Admin",
        ]
        page.screenshot(
            path=str(
                ARTIFACTS / f"every-desktop-{width}-more-open-{'js' if javascript else 'nojs'}.png"
            )
        )
        tokens.click()
        page.wait_for_url("**/tokens/")
    finally:
        context.close()
