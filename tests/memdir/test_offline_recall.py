import os
from pathlib import Path

import pytest

from memapp.bench import recall_eval
from memapp.memdir import offline_recall as recall_module
from memapp.memdir.offline_recall import (
    RecallIndex,
    clear_recall_cache,
    recall_index,
    recall_offline,
    select_reason,
)
from memapp.memdir.scan import MemoryHeader, ScanCache, scan_memory_files

NOW_MS = 1_774_693_800_000  # 2026-03-28T10:30:00.000Z
DAY_MS = 86_400_000


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_recall_cache()
    yield
    clear_recall_cache()


def write(root: Path, rel: str, text: str | bytes, age_days: float = 10) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    stamp_ns = int((NOW_MS - age_days * DAY_MS) * 1_000_000)
    os.utime(path, ns=(stamp_ns, stamp_ns))
    return path


def memory(name: str, description: str, mtype: str = "project", body: str = "Body.") -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {mtype}\n---\n{body}\n"


def recall(root: Path, query: str, **kwargs) -> list[str]:
    return [h.path for h in recall_offline(root, query, now_ms=NOW_MS, **kwargs)]


@pytest.fixture
def store(tmp_path):
    """A small memory directory of a web team, with a few unrelated neighbours."""
    write(
        tmp_path,
        "project_db_suite.md",
        memory(
            "Intermittent failures in the DB test suite",
            "test_numbering fails now and then on CI because of a race between workers",
        ),
    )
    write(
        tmp_path,
        "feedback_money.md",
        memory("Money is Decimal", "Store amounts as Decimal cents, never float", "feedback"),
    )
    write(
        tmp_path,
        "reference_grafana.md",
        memory("Grafana dashboards", "Queue depth and webhook lag panels", "reference"),
    )
    write(
        tmp_path,
        "user_role.md",
        memory("Backend engineer", "Ana owns the invoicing backend", "user"),
    )
    write(tmp_path, "MEMORY.md", "- [Money](feedback_money.md) — Decimal\n")
    return tmp_path


# --- selection --------------------------------------------------------------------------------


def test_it_finds_the_memory_a_query_is_about(store):
    assert recall(store, "how should we store amounts, float or Decimal?") == ["feedback_money.md"]


def test_an_unrelated_query_gets_nothing(store):
    assert recall(store, "write a haiku about autumn leaves") == []
    assert recall(store, "what's the capital of Australia?") == []


def test_a_query_of_only_stop_words_or_nothing_gets_nothing(store):
    assert recall(store, "") == []
    assert recall(store, "can you please do it for me?") == []


def test_synonyms_find_memories_worded_differently(store):
    assert recall(store, "flaky tests on the pipeline again") == ["project_db_suite.md"]


def test_action_words_alone_do_not_select_anything(tmp_path):
    write(tmp_path, "writing.md", memory("Ask before writing migrations", "Schema review first"))
    assert recall(tmp_path, "write a limerick") == []
    assert recall(tmp_path, "writing migrations") == ["writing.md"]


def test_the_index_file_is_never_a_candidate(store):
    assert "MEMORY.md" not in recall(store, "Money Decimal dashboards invoicing backend")


def test_at_most_limit_memories_are_returned(tmp_path):
    for n in range(8):
        write(tmp_path, f"deploy_{n}.md", memory(f"Deploy checklist {n}", "Deploy steps"))
    assert len(recall(tmp_path, "deploy checklist")) == 5
    assert len(recall(tmp_path, "deploy checklist", limit=2)) == 2
    assert recall(tmp_path, "deploy checklist", limit=0) == []


def test_already_surfaced_memories_are_removed_and_their_slot_refilled(tmp_path):
    for n in range(6):
        write(tmp_path, f"deploy_{n}.md", memory(f"Deploy checklist {n}", "Deploy steps"), n)
    first = recall(tmp_path, "deploy checklist")
    assert first == [f"deploy_{n}.md" for n in range(5)]

    second = recall(tmp_path, "deploy checklist", already_surfaced=["deploy_0.md"])
    assert second == ["deploy_1.md", "deploy_2.md", "deploy_3.md", "deploy_4.md", "deploy_5.md"]

    absolute = str(tmp_path / "deploy_1.md")
    assert "deploy_1.md" not in recall(tmp_path, "deploy checklist", already_surfaced=[absolute])


def test_weak_matches_do_not_fill_in_for_a_surfaced_best_match(store):
    query = "flaky CI tests"
    assert recall(store, query) == ["project_db_suite.md"]
    assert recall(store, query, already_surfaced=["project_db_suite.md"]) == []


def test_equal_scores_go_newest_first(tmp_path):
    write(tmp_path, "a.md", memory("Release freeze", "No merges during the freeze"), age_days=30)
    write(tmp_path, "b.md", memory("Release freeze", "No merges during the freeze"), age_days=2)
    assert recall(tmp_path, "release freeze") == ["b.md", "a.md"]

    write(tmp_path, "a.md", memory("Release freeze", "No merges during the freeze"), age_days=1)
    assert recall(tmp_path, "release freeze") == ["a.md", "b.md"]


def test_recency_never_makes_an_unrelated_memory_relevant(tmp_path):
    write(tmp_path, "new.md", memory("Lunch order", "Friday pizza preferences"), age_days=0)
    write(tmp_path, "old.md", memory("Release freeze", "No merges during the freeze"), 300)
    assert recall(tmp_path, "release freeze") == ["old.md"]


# --- recently used tools ----------------------------------------------------------------------


@pytest.fixture
def tool_store(tmp_path):
    write(
        tmp_path,
        "reference_bash.md",
        memory(
            "Shell commands for this repo",
            "Bash usage reference: pytest options and make targets to run the test suite",
            "reference",
        ),
    )
    write(
        tmp_path,
        "bash_venv.md",
        memory(
            "Bash tool: the virtualenv is not activated",
            "Known issue: in Bash, pytest resolves to the system Python; run the test suite "
            "with .venv/bin/python -m pytest",
            "feedback",
        ),
    )
    write(
        tmp_path,
        "reference_linear.md",
        memory("Using the Linear MCP tools", "How to search issues for team BIL", "reference"),
    )
    write(
        tmp_path,
        "linear_bug.md",
        memory(
            "Linear MCP search stops at 50",
            "Known bug: search issues truncates at 50 results without saying so",
        ),
    )
    return tmp_path


def test_usage_docs_of_a_tool_in_use_are_skipped_but_its_gotchas_kept(tool_store):
    query = "run the test suite with pytest"
    assert set(recall(tool_store, query)) == {"reference_bash.md", "bash_venv.md"}
    assert recall(tool_store, query, recent_tools=["Bash"]) == ["bash_venv.md"]
    # Another tool in use changes nothing.
    assert set(recall(tool_store, query, recent_tools=["Grep"])) == {
        "reference_bash.md",
        "bash_venv.md",
    }


def test_a_single_name_may_be_given_as_a_string(tool_store):
    query = "run the test suite with pytest"
    assert recall(tool_store, query, recent_tools="Bash") == ["bash_venv.md"]
    assert recall(tool_store, query, already_surfaced="bash_venv.md") == ["reference_bash.md"]


def test_mcp_tools_are_matched_by_their_server(tool_store):
    query = "search Linear issues for the team"
    assert set(recall(tool_store, query)) == {"reference_linear.md", "linear_bug.md"}
    tools = ["mcp__linear__search_issues"]
    assert recall(tool_store, query, recent_tools=tools) == ["linear_bug.md"]


def test_tools_named_with_ordinary_words_need_the_word_tool(tmp_path):
    write(
        tmp_path, "reading.md", memory("Reading list", "Docs to read about invoicing", "reference")
    )
    write(tmp_path, "readtool.md", memory("Read tool tips", "Read tool options for invoicing"))
    got = recall(tmp_path, "invoicing read", recent_tools=["Read"])
    assert "reading.md" in got
    assert "readtool.md" not in got


# --- directories and files --------------------------------------------------------------------


def test_an_empty_or_missing_directory_gives_nothing(tmp_path):
    assert recall(tmp_path, "anything at all") == []
    assert recall(tmp_path / "missing", "anything at all") == []


def test_malformed_files_do_not_break_recall(tmp_path):
    write(tmp_path, "binary.md", b"\x00\x01\x02 deploy deploy \x00")
    write(tmp_path, "latin1.md", "---\nname: caf\xe9 deploy\n---\nbody\n".encode("latin-1"))
    write(tmp_path, "empty.md", "")
    write(tmp_path, "unclosed.md", "---\nname: deploy\n" + "x: y\n" * 40)
    write(tmp_path, "huge.md", memory("Huge", "Big file", body="deploy words " * 200_000))
    write(
        tmp_path,
        "pgbouncer_locks.md",
        '---\nname: PgBouncer breaks advisory locks\ndescription: "unterminated\n---\n'
        "Transaction pooling releases session advisory locks on another connection.\n",
    )
    headers = scan_memory_files(tmp_path, cache=ScanCache())
    assert any(h.problem for h in headers)

    assert recall(tmp_path, "pgbouncer advisory locks")[0] == "pgbouncer_locks.md"
    assert isinstance(recall(tmp_path, "deploy"), list)


def test_files_without_frontmatter_are_found_by_path_and_body(tmp_path):
    write(tmp_path, "notes/release_checklist.md", "- tag the release\n- post in #release\n")
    assert recall(tmp_path, "release checklist") == ["notes/release_checklist.md"]


def test_excluded_top_level_entries_are_not_candidates(store):
    write(store, "team/flaky.md", memory("Flaky tests", "Intermittent CI failures"))
    assert "team/flaky.md" in recall(store, "flaky CI tests")
    assert "team/flaky.md" not in recall(store, "flaky CI tests", exclude=("team",))


def test_the_threshold_holds_in_a_large_directory(tmp_path):
    topics = ["gardening", "cooking", "travel", "music", "painting", "chess", "cycling", "poetry"]
    for n in range(400):
        topic = topics[n % len(topics)]
        write(
            tmp_path,
            f"filler_{n}.md",
            memory(f"{topic.title()} note {n}", f"Thoughts on {topic} number {n}"),
            age_days=n % 90,
        )
    write(
        tmp_path, "flaky.md", memory("Intermittent CI failures", "The DB suite fails now and then")
    )
    assert recall(tmp_path, "flaky tests in CI") == ["flaky.md"]
    assert recall(tmp_path, "what's the capital of Australia?") == []


# --- the cache --------------------------------------------------------------------------------


def test_an_unchanged_directory_is_not_read_again(store, monkeypatch):
    reads = []
    real = recall_module._read_body
    monkeypatch.setattr(recall_module, "_read_body", lambda r, p: reads.append(p) or real(r, p))

    first = recall_index(store)
    assert sorted(reads) == sorted(h.path for h in first.headers)
    assert first.bodies_read == len(first) == 4

    reads.clear()
    recall_offline(store, "flaky tests")
    assert recall_index(store) is first
    assert reads == []


def test_a_changed_file_is_read_again_and_only_it(store):
    first = recall_index(store)
    write(store, "feedback_money.md", memory("Money is Decimal", "Prices in cents", "feedback"), 0)

    second = recall_index(store)
    assert second is not first
    assert second.bodies_read == 1
    assert recall(store, "prices in cents") == ["feedback_money.md"]


def test_new_and_deleted_files_change_the_index(store):
    recall_index(store)
    write(store, "project_freeze.md", memory("Release freeze", "No merges this week"), 0)
    (store / "reference_grafana.md").unlink()

    index = recall_index(store)
    assert index.bodies_read == 1
    paths = {h.path for h in index.headers}
    assert "project_freeze.md" in paths
    assert "reference_grafana.md" not in paths


def test_an_index_can_be_built_from_headers_and_bodies(store):
    headers = scan_memory_files(store, cache=ScanCache())
    bodies = {h.path: "Body." for h in headers}
    index = RecallIndex.build(headers, bodies)
    assert index.bodies_read == len(headers)
    assert [h.path for h in index.search("Decimal amounts")] == ["feedback_money.md"]

    again = RecallIndex.build(headers, bodies, previous=index)
    assert again.bodies_read == 0
    assert again.key == index.key

    headers_only = RecallIndex.build(headers)
    assert headers_only.bodies_read == 0
    assert [h.path for h in headers_only.search("Decimal amounts")] == ["feedback_money.md"]


def test_an_empty_index_answers_nothing():
    index = RecallIndex.build([])
    assert len(index) == 0
    assert index.search("anything") == []


def test_scores_are_reported_best_first(store):
    index = recall_index(store)
    scored = index.scores("flaky CI tests and float amounts", now_ms=NOW_MS)
    assert [h.path for h, _ in scored] == ["project_db_suite.md", "feedback_money.md"]
    assert scored[0][1] >= scored[1][1] > 0


# --- reasons ----------------------------------------------------------------------------------


def test_the_reason_names_the_matching_words(store):
    header = next(h for h in recall_index(store).headers if h.path == "project_db_suite.md")
    assert select_reason(header, "flaky CI tests") == "matches: intermittent (≈ flaky), ci, test"


def test_a_body_only_match_says_so_when_the_index_is_given(tmp_path):
    write(tmp_path, "x.md", memory("Team lunch", "Where we eat", body="Pizza on Fridays."))
    index = recall_index(tmp_path)
    header = index.headers[0]
    assert select_reason(header, "pizza") == "related to the query"
    assert select_reason(header, "pizza", index) == "matches in the body: pizza"


def test_the_reason_follows_an_edited_header_of_the_same_file():
    """A memory's analysed head is kept between recalls: an edit must not get the old reason."""
    before = MemoryHeader("notes.md", NOW_MS, 10, "Notes", "Canary rollout", None, None, None)
    assert select_reason(before, "canary rollout") == "matches: canary, rollout"
    after = MemoryHeader("notes.md", NOW_MS, 10, "Notes", "Lunch on Fridays", None, None, None)
    assert select_reason(after, "canary rollout") == "related to the query"
    assert select_reason(after, "friday lunch") == "matches: fridays, lunch"


def test_a_header_unknown_to_the_index_still_gets_a_reason(store):
    header = MemoryHeader("elsewhere.md", NOW_MS, 10, "Pizza", None, None, None, None)
    assert select_reason(header, "pizza", recall_index(store)) == "matches: pizza"


# --- text analysis ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "words",
    [
        ("test", "tests", "testing"),
        ("cache", "cached", "caching"),
        ("migrate", "migration", "migrations"),
        ("deploy", "deployed", "deployment"),
        ("run", "running"),
        ("dependency", "dependencies"),
    ],
)
def test_word_families_share_a_stem(words):
    assert len({recall_module._stem(w) for w in words}) == 1


def test_mixed_case_words_are_kept_whole_and_split():
    surfaces = [t.surface for t in recall_module._tokens("GitHub InvoiceDTO")]
    assert surfaces == ["github", "git", "hub", "invoicedto", "invoice", "dto"]


def test_a_long_run_of_letters_is_read_in_linear_time():
    """A memory of one 60,000-letter word with no case switch (a pasted blob): indexing and
    marking it took time growing with its square (minutes; a recall held the server's
    worker), and must take a blink like any other text of its size."""
    import time

    from memapp.memdir.ranking import marked_spans

    blob = "a" * 60_000
    start = time.perf_counter()
    tokens = recall_module._tokens(f"{blob} GitHub {blob}xY")
    spans = marked_spans("github", f"{blob} GitHub {blob}")
    assert time.perf_counter() - start < 5  # quadratic: over a minute; linear: milliseconds
    surfaces = [t.surface for t in tokens]
    assert surfaces[:5] == [blob, "github", "git", "hub", f"{blob}xy"]  # and its parts
    assert spans == [(60_001, 60_007)]


def test_phrases_map_to_concepts():
    tokens = recall_module._tokens("the cache ran out of memory")
    concepts = {c for t in tokens for c in t.concepts}
    assert {"~cache", "~oom"} <= concepts


# --- the labelled set -------------------------------------------------------------------------


def test_the_labelled_set_is_complete_and_consistent():
    queries = recall_eval.load_queries()
    assert len(queries) >= 40
    assert {q.category for q in queries} == set(recall_eval.CATEGORIES)
    memory_dir = recall_eval.evalset_dir() / "memory"
    files = {str(p.relative_to(memory_dir)) for p in memory_dir.rglob("*.md")}
    assert 60 <= len(files) - 3 <= 100  # three MEMORY.md indexes
    for q in queries:
        assert set(q.expected) <= files, q.query
        assert set(q.already_surfaced) <= files, q.query
        assert not set(q.expected) & set(q.already_surfaced), q.query


def test_offline_recall_meets_the_targets_on_the_labelled_set():
    outcomes = recall_eval.evaluate()
    figures = recall_eval.Figures(outcomes)
    report = recall_eval.report(outcomes)
    assert figures.f1 >= 0.6, report
    assert figures.empty_accuracy >= 0.8, report
    synonyms = recall_eval.Figures([o for o in outcomes if o.query.category == "synonym"])
    assert synonyms.recall >= 0.6, report


def test_the_eval_command_prints_the_figures(capsys):
    assert recall_eval.main(["--split", "dev"]) == 0
    out = capsys.readouterr().out
    for label in ("P@5", "R@5", "F1", "empty acc", "synonym", "tool", "surfaced"):
        assert label in out


# -- the review UI's search: rank and match_spans ------------------------------------------------


def test_rank_lists_weak_matches_below_strong_ones_without_thresholds():
    from memapp.memdir.offline_recall import RecallIndex
    from memapp.memdir.scan import MemoryHeader

    def header(path, name, description):
        return MemoryHeader(path, 1, 1, name, description, "project", None, None, True)

    index = RecallIndex.build(
        [
            header("a.md", "Flaky CI job", "The nightly job fails now and then"),
            header("b.md", "Release train", "We ship on Tuesdays; tests must be green"),
            header("c.md", "Coffee", "The kitchen has an espresso machine"),
        ]
    )
    ranked = [h.path for h, _ in index.rank("flaky tests")]
    assert ranked == ["a.md", "b.md"]
    # A word only the description holds is too weak for recall, but a person searching sees it.
    assert index.search("green") == []
    assert [h.path for h, _ in index.rank("green")] == ["b.md"]
    assert index.rank("espresso kubernetes")[0][0].path == "c.md"
    assert index.rank("helm") == []


@pytest.mark.parametrize(
    ("query", "text", "marked"),
    [
        (
            "flaky tests",
            "Flaky CI job: test_orders fails intermittently",
            ["Flaky", "test", "intermittently"],
        ),
        (
            "out of memory",
            "the worker was OOMKilled, out of memory again",
            ["OOMKilled", "out of memory"],
        ),
        ("invoice", "Rounding in InvoiceDTO lines", ["InvoiceDTO"]),
        ("the a of", "the cat of a neighbour", []),
        ("deploy", "Deployment on Fridays: deploys wait", ["Deployment", "deploys"]),
        # "time" starts a phrase of each: only the query's own is marked as a phrase.
        ("timeout", "Time zone drift, then the request timed out", ["timed out"]),
        ("time zone", "Time zone drift, then the request timed out", ["Time zone", "timed"]),
    ],
)
def test_match_spans_marks_what_the_ranking_counted(query, text, marked):
    from memapp.memdir.offline_recall import match_spans

    assert [text[a:b] for a, b in match_spans(query, text)] == marked


def test_scored_list_gives_the_scores_of_scored_as_a_list():
    """The same floats, bit for bit (the order of equal scores depends on it), 0.0 elsewhere,
    for a query most files match (summed down a column), for one few do, and for both at once
    in either order."""
    from memapp.memdir.offline_recall import RecallIndex
    from memapp.memdir.scan import MemoryHeader

    headers = [
        MemoryHeader(f"m{n}.md", n * 3_600_000, 1, name, "", kind, None, None, True)
        for n, (name, kind) in enumerate(
            [
                ("Flaky CI job", "project"),
                ("Deploy on Fridays", "feedback"),
                ("Coffee", "user"),
                ("Release train ships tests", "reference"),
                ("Flaky deploy tests, again flaky", "project"),
                *((f"Lunch {n}", "user") for n in range(40)),
            ]
        )
    ]
    index = RecallIndex.build(headers, {"m2.md": "the espresso machine is flaky"})
    queries = ("flaky tests", "deploy", "ship a release", "espresso", "helm", "lunch")
    for query in (*queries, "lunch flaky", "flaky tests lunch", "lunch"):
        scored = index.scored(query, now_ms=10 * 3_600_000)
        listed = index.scored_list(query, now_ms=10 * 3_600_000)
        assert {i: s for i, s in enumerate(listed) if s} == scored
        assert listed.count(0.0) == len(headers) - len(scored)
