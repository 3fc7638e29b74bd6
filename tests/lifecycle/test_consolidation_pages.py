"""The pages of consolidation, without JavaScript (docs/design.md §14.7–§14.8): the store page's
card and "Consolidate now", the whole-store review with the index before and after and its
meters, tick boxes, edits and the explicit tick a risky proposal needs, the daily-log timeline,
the runs on the Proposals page; everything someone else's is a 404."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from memapp.lifecycle.models import Proposal
from memapp.lifecycle.store_proposals import INDEX_KEY
from memapp.memdir.daily_logs import append_to_log
from memapp.memdir.store_files import checksum
from memapp.stores.projects import resolve_store
from tests.conftest import PASSWORD, write_memory
from tests.lifecycle.conftest import PROJECT, consolidate_now, run_worker
from tests.lifecycle.untidy import index_problems, make_untidy

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits


def browser(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def untidy(alice):
    store = resolve_store(alice, PROJECT, "private")
    make_untidy(Path(store.path))
    return store


def test_the_store_page_offers_consolidate_now_and_follows_the_run(alice, untidy):
    client = browser(alice)
    page = client.get(reverse("store", kwargs={"store_id": untidy.pk})).content.decode()
    assert 'id="consolidation"' in page and "Consolidate now" in page
    assert "never" in page  # no run yet
    response = client.post(reverse("consolidate_now", kwargs={"store_id": untidy.pk}))
    assert response.status_code == 302 and response["Location"].endswith("#consolidation")
    page = client.get(response["Location"]).content.decode()
    assert "Consolidation started" in page
    assert 'hx-trigger="every 2s"' in page and "reload the page" in page
    assert "disabled" in page.split('id="consolidation"')[1].split("</form>")[0]
    again = client.post(reverse("consolidate_now", kwargs={"store_id": untidy.pk}), follow=True)
    assert "already under way" in again.content.decode()

    run_worker()
    panel = client.get(reverse("consolidation_panel", kwargs={"store_id": untidy.pk}))
    text = panel.content.decode()
    assert "every 2s" not in text and "by memhub" in text
    proposal = Proposal.objects.get(kind="consolidation")
    assert f"Consolidation #{proposal.pk}</a> waits for your review" in text


def test_the_review_shows_the_index_before_and_after_and_applies_the_ticked(alice, untidy):
    consolidate_now(untidy, alice)
    proposal = Proposal.objects.get(kind="consolidation")
    client = browser(alice)
    url = reverse("proposal", kwargs={"proposal_id": proposal.pk})
    page = client.get(url).content.decode()
    assert "MEMORY.md before and after" in page
    assert 'id="before-lines"' in page and 'id="after-lines"' in page
    assert "216 / 200" in page and '<span class="flag bad">over</span>' in page
    assert "Near-duplicates to merge" in page and "feedback_db_again.md" in page
    assert "Left out of the index to fit its caps" in page
    assert "by memhub’s rules" in page
    changes = {c.key: c for c in proposal.changes.all()}
    for change in changes.values():
        assert f'name="changes" value="{change.pk}" checked' in page

    response = client.post(
        url,
        {
            "decision": "approve",
            "changes": [changes["MEMORY.md"].pk, changes["project_freeze.md"].pk],
            f"body-{changes['MEMORY.md'].pk}": changes["MEMORY.md"].body + "# kept by Alice\n",
        },
    )
    assert response.status_code == 302
    assert "Applied 2 changes" in client.get(url).content.decode()
    root = Path(untidy.path)
    assert (root / "MEMORY.md").read_text().endswith("# kept by Alice\n")
    assert index_problems(root)["dangling"] == []


def test_a_risky_proposal_asks_for_the_explicit_tick(alice):
    store = resolve_store(alice, PROJECT, "private")
    root = Path(store.path)
    for name in ("a", "b", "c"):
        write_memory(root, f"{name}.md", name, f"Memory {name}", "user")
    (root / "MEMORY.md").write_text("- [a](a.md) — a\n- [b](b.md) — b\n- [c](c.md) — c\n")
    proposal = Proposal.objects.create(kind="consolidation", store=store, owner=alice)
    index_text = (root / "MEMORY.md").read_bytes()
    delete_b = proposal.changes.create(
        action="delete", key="b.md", base_checksum=checksum((root / "b.md").read_bytes())
    )
    delete_c = proposal.changes.create(
        action="delete", key="c.md", base_checksum=checksum((root / "c.md").read_bytes())
    )
    index = proposal.changes.create(
        action="update",
        key=INDEX_KEY,
        body="- [a](a.md) — a\n",
        base_checksum=checksum(index_text),
    )
    client = browser(alice)
    url = reverse("proposal", kwargs={"proposal_id": proposal.pk})
    page = html.unescape(client.get(url).content.decode())
    assert "Check before approving" in page
    assert "This proposal deletes 2 of the store's 3 memories (67 %)" in page
    ticks = {"decision": "approve", "changes": [delete_b.pk, delete_c.pk, index.pk]}
    refused = client.post(url, ticks).content.decode()
    assert "tick the box to apply it anyway" in refused
    assert (root / "b.md").exists() and (root / "c.md").exists()
    assert client.post(url, {**ticks, "confirm": "on"}).status_code == 302
    assert not (root / "b.md").exists() and not (root / "c.md").exists()


def test_the_daily_logs_timeline_shows_each_day_and_what_is_distilled(alice):
    store = resolve_store(alice, PROJECT, "private")
    append_to_log(store.path, "logs/2026/03/2026-03-05.md", ["- 09:05 [project] Freeze soon"])
    append_to_log(store.path, "logs/2026/02/2026-02-27.md", ["- 17:00 An older entry"])
    client = browser(alice)
    panel = reverse("consolidation_panel", kwargs={"store_id": store.pk})
    assert "Daily logs</a>: 2 days, 2 entries not distilled yet." in client.get(panel).text
    url = reverse("daily_logs", kwargs={"store_id": store.pk})
    page = client.get(url).content.decode()
    assert "Thursday 5 March 2026" in page and "Freeze soon" in page
    assert "not distilled yet" in page and "2 entries are waiting" in page
    assert 'href="?month=2026-02"' in page and "An older entry" not in page
    assert "An older entry" in client.get(url, {"month": "2026-02"}).content.decode()
    consolidate_now(store, alice)  # the distillation reads both entries
    page = client.get(url).content.decode()
    assert '<span class="flag info">distilled</span>' in page
    assert "not distilled yet" not in page
    append_to_log(store.path, "logs/2026/03/2026-03-05.md", ["- 09:30 One more"])
    assert "Daily logs</a>: 2 days, 1 entry not distilled yet." in client.get(panel).text


def test_the_proposals_page_lists_consolidation_runs(alice, untidy):
    consolidate_now(untidy, alice)
    page = browser(alice).get(reverse("proposals")).content.decode()
    assert "Consolidation runs" in page and "Consolidate now" in page
    assert "proposed changes" in page


def test_nobody_else_sees_consolidation_or_logs(alice, bob, untidy):
    consolidate_now(untidy, alice)
    proposal = Proposal.objects.get(kind="consolidation")
    client = browser(bob)
    for url in [
        reverse("daily_logs", kwargs={"store_id": untidy.pk}),
        reverse("consolidation_panel", kwargs={"store_id": untidy.pk}),
        reverse("proposal", kwargs={"proposal_id": proposal.pk}),
    ]:
        assert client.get(url).status_code == 404, url
    response = client.post(reverse("consolidate_now", kwargs={"store_id": untidy.pk}))
    assert response.status_code == 404


def test_the_dashboard_shows_cap_usage_before_and_after_and_stale_memories(alice, bob, untidy):
    consolidate_now(untidy, alice)
    page = browser(alice).get(reverse("dashboard")).content.decode()
    section = page.split('<section class="card" id="consolidation">')[1].split("</section>")[0]
    assert "1 run in these 30 days" in section
    assert "216 / 200" in section and "201 / 200" not in section
    after_lines = section.split('data-label="After">')[1].split('<td class="num">')[1]
    assert int(after_lines.split(" / ")[0]) <= 200
    assert "Stale memories found by consolidation" in section and "213 now" in section
    assert "<title>" in section  # the chart's bars say what they count
    others = browser(bob).get(reverse("dashboard")).content.decode()
    assert "216 / 200" not in others and "0 now" in others


def test_the_second_proposal_shows_the_index_with_what_the_first_added(alice):
    """After the distillation of a run is approved, its consolidation shows (in the index
    diff and in the text to edit) the entry the distillation added; a person who removes it
    from that text removes it."""
    from memapp.lifecycle.store_proposals import do_apply_store_proposal
    from tests.lifecycle.conftest import distill_and_consolidate

    store, proposals, created = distill_and_consolidate(alice)
    do_apply_store_proposal(proposals["distillation"], alice)
    consolidation = proposals["consolidation"]
    index = consolidation.changes.get(key=INDEX_KEY)
    client = browser(alice)
    url = reverse("proposal", kwargs={"proposal_id": consolidation.pk})
    page = html.unescape(client.get(url).content.decode())
    textarea = page.split(f'name="body-{index.pk}"')[1].split("</textarea>")[0]
    assert f"]({created})" in textarea and "gone.md" not in textarea
    card = page.split(f'id="change-{index.pk}"')[1].split("</section>")[0]
    assert card.count(f"]({created})") == 3  # now, proposed and the text: not shown as removed

    kept = "".join(line for line in textarea.split(">", 1)[1].splitlines(keepends=True)
                   if created not in line)  # fmt: skip
    ticks = [c.pk for c in consolidation.changes.all()]
    response = client.post(url, {"decision": "approve", "changes": ticks, f"body-{index.pk}": kept})
    assert response.status_code == 302
    text = (Path(store.path) / INDEX_KEY).read_text()
    assert created not in text and "project_freeze.md" in text
