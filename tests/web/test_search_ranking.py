"""The review UI's search ranks like recall, marks what matched, and keeps the filters."""

from __future__ import annotations

import os
import re
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from memapp.stores.mirror import rescan_store
from memapp.stores.models import RecallStat
from tests.conftest import write_memory
from tests.web.memory_pages import root, set_age, text, url
from tests.web.test_store_views import titles

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(stores):
    directory = root(stores.private)
    write_memory(
        directory,
        "project_flaky_ci.md",
        "Flaky CI job",
        "The nightly integration job fails now and then",
        "project",
        "Retry once; the runner's disk fills up under load.\n",
    )
    write_memory(
        directory,
        "reference_runbooks.md",
        "Ops runbooks",
        "Where the runbooks live",
        "reference",
        "See the wiki. Tests of the deploy script are slow.\n",
    )
    write_memory(
        directory,
        "feedback_test_names.md",
        "Test names",
        "Name tests after the behaviour",
        "feedback",
        "Sentence names.\n",
    )
    set_age(directory / "project_flaky_ci.md", 40)  # old: recency does not bury it
    rescan_store(stores.private)
    return stores.private


def marks(response) -> list[str]:
    return re.findall(r'<mark class="hit">([^<]*)</mark>', response.content.decode())


def test_flaky_tests_finds_the_flaky_ci_job_first(client, corpus, alice):
    client.force_login(alice)
    response = client.get("/search/?q=flaky+tests")
    found = titles(response)
    assert found[0] == "Flaky CI job"
    assert "flaky tests" not in (root(corpus) / "project_flaky_ci.md").read_text().lower()
    assert set(found) >= {"Flaky CI job", "Test names"}  # weaker matches are listed too
    assert "Flaky" in marks(response)
    assert "now and then" in marks(response)  # a synonym of "flaky" in its description


def test_the_store_page_search_ranks_too(client, corpus, alice):
    client.force_login(alice)
    assert titles(client.get(url("store", corpus) + "?q=flaky+tests"))[0] == "Flaky CI job"


def test_a_body_match_is_shown_as_a_marked_snippet(client, corpus, alice):
    client.force_login(alice)
    response = client.get("/search/?q=disk")
    assert titles(response) == ["Flaky CI job"]
    assert 'Retry once; the runner\'s <mark class="hit">disk</mark> fills up under load.' in (
        response.content.decode().replace("&#x27;", "'")
    )


def test_part_of_a_word_still_finds_what_holds_it(client, corpus, alice):
    client.force_login(alice)
    response = client.get("/search/?q=runb")
    assert titles(response) == ["Ops runbooks"]
    assert marks(response)[:1] == ["runb"]


def test_a_plain_text_match_follows_an_edit_of_the_file(client, corpus, alice):
    """The files' text the plain-text match reads is kept with the store's index: once the
    file is edited (same size) and rescanned, its new text is found and its old text not."""
    client.force_login(alice)
    search = url("store", corpus) + "?q="
    assert titles(client.get(search + "ee the wik")) == ["Ops runbooks"]  # warms what is kept
    path = root(corpus) / "reference_runbooks.md"
    path.write_text(path.read_text().replace("the wiki", "the docs"))
    later = path.stat().st_mtime + 5
    os.utime(path, (later, later))
    rescan_store(corpus)
    assert "No memories match." in text(client.get(search + "ee the wik"))
    assert titles(client.get(search + "ee the doc")) == ["Ops runbooks"]


def test_the_words_of_the_kept_texts_follow_an_edit(client, corpus, alice):
    """The plain-text match reads only the kept texts holding a word that holds the query
    ("wik": one file of three); once files are edited and rescanned, in the same process, the
    one that now holds it is found and the one that no longer does is not."""
    client.force_login(alice)
    search = url("store", corpus) + "?q="
    assert titles(client.get(search + "wik")) == ["Ops runbooks"]
    for name, old, new in [
        ("reference_runbooks.md", "the wiki", "the zork"),
        ("feedback_test_names.md", "Sentence names", "Sentence wikis"),
    ]:
        path = root(corpus) / name
        path.write_text(path.read_text().replace(old, new))
        later = path.stat().st_mtime + 5
        os.utime(path, (later, later))
    rescan_store(corpus)
    assert titles(client.get(search + "wik")) == ["Test names"]
    assert titles(client.get(search + "zor")) == ["Ops runbooks"]


def test_the_filters_still_apply_to_a_ranked_search(client, corpus, alice):
    client.force_login(alice)
    feedback = titles(client.get("/search/?q=flaky+tests&type=feedback"))
    assert feedback == ["Test names", "Real DB"]  # "tests" in a name counts more
    this_week = titles(client.get("/search/?q=flaky+tests&age=7"))
    assert "Flaky CI job" not in this_week and "Test names" in this_week
    by_name = titles(client.get("/search/?q=flaky+tests&sort=name"))
    assert by_name == sorted(by_name)


def test_an_unrelated_query_finds_nothing(client, corpus, alice):
    client.force_login(alice)
    assert "No memories match." in text(client.get("/search/?q=kubernetes+helm"))


def test_memories_never_recalled_can_be_listed(client, corpus, alice):
    RecallStat.objects.create(
        store=corpus, path="project_flaky_ci.md", count=2, last_recalled_at="2026-01-01T00:00Z"
    )
    client.force_login(alice)
    never = titles(client.get(url("store", corpus) + "?problem=never_recalled"))
    assert "Flaky CI job" not in never and "Ops runbooks" in never


def test_a_store_search_costs_the_same_queries_small_or_large(client, corpus, alice):
    """The ranked part comes from the store's index, the rows for the plain-text matches and
    the page shown: as many queries at 3 files as at 600, the first search after a rescan (the
    index rebuilt) and the next one alike (issue 29: 49 queries at 20,000 files)."""
    client.force_login(alice)
    search = url("store", corpus) + "?q=flaky+tests"

    def counts() -> tuple[int, int]:
        rescan_store(corpus)
        corpus.refresh_from_db()
        counted = []
        for _ in range(2):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(search).status_code == 200
            counted.append(len(queries))
        return counted[0], counted[1]

    small = counts()
    for n in range(600):
        write_memory(
            root(corpus), f"project_job_{n}.md", f"Job {n}", "A flaky nightly test", "project"
        )
    large = counts()
    assert large == small
    assert len(titles(client.get(search))) == 50  # a full page, of the 600 that match


def test_each_memory_links_to_its_page_with_its_key_quoted_as_reverse_quotes(client, corpus, alice):
    """The rows' links are built from one reversal a store, quoted as `reverse` quotes."""
    key = "notes/a b#c%d?e&f'g+ü日.md"
    write_memory(root(corpus), key, "Odd key", "A flaky name for a file", "project")
    rescan_store(corpus)
    client.force_login(alice)
    memory = escape(reverse("memory", kwargs={"store_id": corpus.pk, "path": key}))
    store = escape(reverse("store", kwargs={"store_id": corpus.pk}))
    assert "%23" in memory and "%C3%BC" in memory and "&amp;" in memory
    for page in (url("store", corpus), "/search/"):
        html = client.get(page + "?q=flaky").content.decode()
        assert f'<a class="title" href="{memory}">' in html
    assert f'<td data-label="Store"><a href="{store}">' in html  # the Search page's


def test_a_broad_search_pages_through_the_ranking_in_order(client, corpus, alice):
    """Only the scores at or above the page's last are put in order: every page still follows
    the ranking, equal scores newest first, also where a page ends inside a run of them."""
    from memapp.stores import memory_search

    now = time.time()
    for n in range(130):  # in threes of equal text and age: equal scores
        path = write_memory(
            root(corpus),
            f"project_job_{n}.md",
            f"Job {n // 3}",
            "A flaky nightly test" + " again" * (n // 3 % 7),
            "project",
        )
        os.utime(path, (now - n // 3 * 3600, now - n // 3 * 3600))
    rescan_store(corpus)
    corpus.refresh_from_db()
    index = memory_search.store_search_index(corpus)
    ranked = [h.path for h, _ in index.rank("flaky")]
    client.force_login(alice)
    for size in (50, 7):
        found = memory_search.search_memories([corpus], {"q": "flaky"}, 0, 0)
        pages = [found[start : start + size] for start in range(0, len(ranked), size)]
        assert [row.path for page in pages for row in page] == ranked
