import difflib
import itertools
import random

import pytest

from memapp.memdir import lint
from memapp.memdir.lint import (
    memory_warnings,
    missing_why_how,
    near_duplicates,
    relative_dates,
)

# --- relative_dates ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Release freeze starts next Tuesday.", ["next Tuesday"]),
        ("We migrated last week.", ["last week"]),
        ("Merge it tomorrow.", ["tomorrow"]),
        ("Broke yesterday.", ["yesterday"]),
        ("Demo this Friday.", ["this Friday"]),
        ("Revisit in two weeks.", ["in two weeks"]),
        ("Revisit in 3 months.", ["in 3 months"]),
        ("Revisit in a couple of weeks.", ["in a couple of weeks"]),
        ("Budget resets next month.", ["next month"]),
        ("Deployed today.", ["today"]),
        ("Today's API returns 404 for deleted users.", ["Today"]),
        ("The migration runs tonight.", ["tonight"]),
        ("Ship it the day after tomorrow.", ["the day after tomorrow"]),
        ("Started the day before yesterday.", ["the day before yesterday"]),
        ("The flag was flipped two days ago.", ["two days ago"]),
        ("Rotated 3 hours ago.", ["3 hours ago"]),
        ("Expires a week from now.", ["a week from now"]),
        ("Land it by end of the week.", ["end of the week"]),
        ("Land it by end of day.", ["end of day"]),
        ("Needs a fix by EOW.", ["EOW"]),
        ("Needs a fix by eod.", ["eod"]),
        ("Freeze is Thursday.", ["Thursday"]),
        ("On Thursday's call we agreed.", ["Thursday"]),
        ("The outage this morning was DNS.", ["this morning"]),
        ("The outage last night was DNS.", ["last night"]),
        ("Paged yesterday afternoon.", ["yesterday afternoon"]),
        ("Standup moved to Friday morning.", ["Friday morning"]),
        ("This past Monday we cut 1.4.", ["This past Monday"]),
        ("Over the past month latency doubled.", ["past month"]),
        ("Next sprint we drop Python 3.10.", ["Next sprint"]),
        ("Planned for the week after next.", ["the week after next"]),
        ("NEXT WEEK and next week", ["NEXT WEEK"]),
        ("next\n  Tuesday", ["next Tuesday"]),
        (
            "Tomorrow we ship; Thursday we demo; tomorrow again; last week it broke.",
            ["Tomorrow", "Thursday", "last week"],
        ),
        # Code is masked without gluing its neighbours together.
        ("Ship next `v2` Tuesday.", ["Tuesday"]),
        # One of each word an expression needs (texts without any are not matched at all).
        ("Rotated 30 seconds ago.", ["30 seconds ago"]),
        ("Restarted 5 minutes ago.", ["5 minutes ago"]),
        ("Renewed two years ago.", ["two years ago"]),
        ("Due by the end of the quarter.", ["end of the quarter"]),
        ("Back in a fortnight.", ["in a fortnight"]),
        ("Paged this evening.", ["this evening"]),
        ("Paged this afternoon.", ["this afternoon"]),
        ("Needs a fix by EOM.", ["EOM"]),
        ("Zurück next Tuesday.", ["next Tuesday"]),
    ],
)
def test_it_finds_relative_dates(text, expected):
    assert relative_dates(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Mondays are deploy days.",
        "Any weekday works; weekdays only, weekdays' queues drain overnight.",
        "Freeze starts 2026-03-05.",
        "Freeze starts March 5, 2026.",
        "Freeze starts 5 March 2026.",
        "Freeze starts Thursday, March 5, 2026.",
        "Freeze starts Thursday 2026-03-05.",
        "Freeze starts 2026-03-05 (Thursday).",
        "Freeze starts next Thursday, 2026-03-05.",
        "We deploy every Monday and every other Friday.",
        "Support runs Monday to Friday, Monday-Friday, Monday through Friday.",
        "The next day we rolled back.",
        "Requests time out in 30 seconds.",
        "Call `today()` for the local date.",
        "Use ``next week`` as the label.",
        "```python\nif is_tomorrow():\n    schedule('next Tuesday')\n```",
        "~~~\nlast week\n~~~",
        "```\nunclosed fence: tomorrow",
        "is_today and today_utc are helpers",
        "Dates are stored as UTC; the weekly job is idempotent.",
    ],
)
def test_it_leaves_absolute_dates_habits_and_code_alone(text):
    assert relative_dates(text) == []


def test_text_after_a_closed_fence_is_checked_again():
    text = "````md\n```\ntomorrow\n```\n````\nShip tomorrow.\n   ```\nyesterday\n   ```\nToday."
    assert relative_dates(text) == ["tomorrow", "Today"]


def test_an_inline_code_span_does_not_cross_a_blank_line():
    assert relative_dates("A stray ` tick.\n\nShip `x` tomorrow.") == ["tomorrow"]


# --- missing_why_how -----------------------------------------------------------------------


FULL_BODY = "Rule.\n\n**Why:** an incident.\n**How to apply:** in CI.\n"


@pytest.mark.parametrize(
    ("memory_type", "body", "expected"),
    [
        ("feedback", FULL_BODY, []),
        ("project", FULL_BODY, []),
        ("feedback", "Rule.", ["Why", "How to apply"]),
        ("project", "", ["Why", "How to apply"]),
        ("feedback", "Rule.\n\n**Why:** x", ["How to apply"]),
        ("feedback", "Rule.\n\n**How to apply:** x", ["Why"]),
        ("feedback", "**Why**: x\n**How to apply**: y", []),
        ("feedback", "__why:__ x\n__HOW TO APPLY:__ y", []),
        ("feedback", "Why: x\nHow to apply: y", []),
        ("feedback", "- Why: x\n- *How to apply:* y", []),
        ("feedback", "> Why: x\n> How  to\napply: y", []),
        ("feedback", "Rule. **Why:** x. **How to apply:** y.", []),
        ("Feedback", "Rule.", ["Why", "How to apply"]),
        # Prose that merely uses the words is not a label.
        (
            "feedback",
            "That is why we mock. Here is how to apply it: carefully.",
            ["Why", "How to apply"],
        ),
        ("feedback", "**why** we do it\nhow to apply the patch", ["Why", "How to apply"]),
        # Labels inside code do not count.
        ("project", "```\n**Why:** x\n**How to apply:** y\n```", ["Why", "How to apply"]),
        ("project", "`**Why:**` and `How to apply:`", ["Why", "How to apply"]),
        ("user", "Ana is a backend engineer.", []),
        ("reference", "See the runbook.", []),
        (None, "Untyped.", []),
        ("unknown", "Untyped.", []),
    ],
)
def test_it_names_the_missing_sections(memory_type, body, expected):
    assert missing_why_how(memory_type, body) == expected


# --- near_duplicates -----------------------------------------------------------------------


ITEMS = [
    ("a.md", "Integration tests must hit a real database, not mocks"),
    ("b.md", "integration tests must hit a REAL database -- not mocks!"),
    ("c.md", "Integration tests should hit the real database, never mocks"),
    ("d.md", "Integration tests use mocks"),
    ("e.md", ""),
    ("f.md", "   "),
    ("g.md", "The and of"),
    ("h.md", "Deploys happen from the main branch only"),
    ("i.md", "Deploys happen only from the main branch"),
    ("j.md", "Run migrations before the deploy"),
    ("k.md", "Run migrations after the deploy"),
]


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        # h/i normalise to "deploys happen main branch only" and "deploys happen only main
        # branch": the same word set (Jaccard 1) and a ratio of 2 * 26 / 62, so 0.9194.
        (0.8, [("a.md", "b.md", 1.0), ("h.md", "i.md", 0.9194)]),
        (
            0.7,
            [
                ("a.md", "b.md", 1.0),
                ("h.md", "i.md", 0.9194),
                ("a.md", "c.md", 0.7766),
                ("b.md", "c.md", 0.7766),
                ("j.md", "k.md", 0.7364),
            ],
        ),
        (1.0, [("a.md", "b.md", 1.0)]),
    ],
)
def test_it_pairs_near_duplicate_descriptions(threshold, expected):
    assert near_duplicates(ITEMS, threshold) == expected


def test_it_ignores_empty_and_stopword_only_descriptions():
    items = [("a", ""), ("b", ""), ("c", "  \n"), ("d", "The of and"), ("e", "the OF and.")]
    assert near_duplicates(items) == []
    assert near_duplicates([]) == []


def test_exact_duplicates_score_one_and_keep_input_order():
    items = [("z.md", "Use ruff, not flake8."), ("a.md", "Use ruff, not flake8."), ("m.md", "x")]
    assert near_duplicates(items) == [("z.md", "a.md", 1.0)]


def test_a_negated_copy_is_surfaced_below_an_exact_duplicate():
    items = [("x", "Use mocks in unit tests"), ("y", "Do not use mocks in unit tests")]
    assert near_duplicates(items) == [("x", "y", 0.8545)]


def test_an_edited_description_is_compared_afresh():
    """Scores are kept per pair of texts, never per key: the same keys with another text are
    scored again."""
    original = ("x", "Use mocks in unit tests")
    assert near_duplicates([original, ("y", "Do not use mocks in unit tests")]) == [
        ("x", "y", 0.8545)
    ]
    assert near_duplicates([original, ("y", "Deploy on Fridays after lunch")]) == []
    assert near_duplicates([original, ("y", "Use mocks in unit tests.")]) == [("x", "y", 1.0)]


def _brute_force(items, threshold):
    normalised = [(key, lint._tokens(text)) for key, text in items]
    normalised = [(key, " ".join(words), set(words)) for key, words in normalised if words]
    pairs = set()
    for (a, ja, sa), (b, jb, sb) in itertools.combinations(normalised, 2):
        ratio = difflib.SequenceMatcher(None, ja, jb, autojunk=False).ratio()
        if (len(sa & sb) / len(sa | sb) + ratio) / 2 >= threshold - 1e-9:
            pairs.add((a, b))
    return pairs


@pytest.mark.parametrize("threshold", [0.51, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0])
def test_blocking_finds_every_pair_scoring_all_pairs_would(threshold):
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(40)]
    items = []
    for i in range(60):
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 8))]
        items.append((f"b{i}", " ".join(words)))
        for _ in range(rng.randint(0, 2)):
            op = rng.random()
            if op < 0.4:
                words[rng.randrange(len(words))] = rng.choice(vocab)
            elif op < 0.7 or len(words) == 1:
                words.insert(rng.randrange(len(words) + 1), rng.choice(vocab))
            else:
                words.pop(rng.randrange(len(words)))
        items.append((f"v{i}", " ".join(words)))

    found = near_duplicates(items, threshold)

    assert {(a, b) for a, b, _ in found} == _brute_force(items, threshold)
    assert [score for *_, score in found] == sorted((s for *_, s in found), reverse=True)


def test_long_descriptions_of_a_small_vocabulary_are_paired_as_all_pairs_would_be():
    """Many shared words and every length from 3 to 20: the counts of shared words reach far."""
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(30)]
    items = []
    for i in range(50):
        words = rng.sample(vocab, rng.randint(3, 20))
        items.append((f"b{i}", " ".join(words)))
        words[rng.randrange(len(words))] = rng.choice(vocab)
        items.append((f"v{i}", " ".join(rng.sample(words, len(words)) if i % 3 else words)))

    found = near_duplicates(items, 0.75)

    assert {(a, b) for a, b, _ in found} == _brute_force(items, 0.75)
    assert len(found) >= 20


def test_it_handles_two_thousand_descriptions_and_finds_the_planted_pairs():
    rng = random.Random(11)
    vocab = [f"term{i}" for i in range(3000)]
    common = ["tests", "database", "deploy", "api", "always", "never", "use", "the", "with"]
    items = []
    for i in range(1990):
        words = [rng.choice(vocab if rng.random() < 0.7 else common) for _ in range(12)]
        items.append((f"m{i}.md", " ".join(words)))
    planted = set()
    for k, i in enumerate(rng.sample(range(1990), 10)):
        original = items[i][1]
        if k % 2:
            copy = original.upper().replace(" ", ", ", 1) + "."  # case and punctuation only
        else:
            copy = original + " " + rng.choice(vocab)  # one word more
        items.append((f"dup{k}.md", copy))
        planted.add((items[i][0], f"dup{k}.md"))

    found = near_duplicates(items)

    assert {(a, b) for a, b, _ in found} == planted
    assert sum(score == 1.0 for *_, score in found) == 5


# --- memory_warnings -----------------------------------------------------------------------

WHY_FEEDBACK = "Missing **Why:** — feedback memories should say why (an incident, a preference)."
HOW_FEEDBACK = "Missing **How to apply:** — feedback memories should say when and where it applies."
WHY_PROJECT = "Missing **Why:** — project memories should say why (an incident, a preference)."
HOW_PROJECT = "Missing **How to apply:** — project memories should say when and where it applies."
EMPTY = "Description is empty: recall relies on it to pick this memory."
ONE_LINE = "Description should be one line."
LONG = (
    "Description is 201 characters: keep it to one line under ~200 (it becomes the memory's "
    "MEMORY.md line, which agents load every session); move detail into the body."
)


def _relative(expression):
    return (
        f'Relative date "{expression}": project memories must use absolute dates (e.g. 2026-03-05).'
    )


@pytest.mark.parametrize(
    ("memory_type", "body", "description", "expected"),
    [
        ("feedback", FULL_BODY, "Integration tests hit a real database", []),
        ("project", FULL_BODY, None, []),
        ("user", "Ana prefers short answers.", "Ana's answer style", []),
        ("feedback", "Rule.", None, [WHY_FEEDBACK, HOW_FEEDBACK]),
        ("project", "Rule.\n\n**Why:** x", None, [HOW_PROJECT]),
        ("project", "Rule.\n\n**How to apply:** x", None, [WHY_PROJECT]),
        ("user", "x", "", [EMPTY]),
        ("user", "x", " \n ", [EMPTY]),
        ("user", "x", "line one\nline two", [ONE_LINE]),
        ("user", "x", "line one\r\nline two", [ONE_LINE]),
        ("user", "x", "one line\n", []),
        ("user", "x", "x" * 200, []),
        ("user", "x", "x" * 201, [LONG]),
        ("user", "x", "x" * 612 + "\n", [LONG.replace("201", "612")]),
        (
            "project",
            "Freeze starts next Tuesday; QA finished last week.\n\n**Why:** x\n**How to apply:** y",
            None,
            [_relative("next Tuesday"), _relative("last week")],
        ),
        (
            "project",
            "Merge freeze until Thursday.",
            "Merge freeze\nuntil thursday",
            [ONE_LINE, WHY_PROJECT, HOW_PROJECT, _relative("thursday")],
        ),
        ("project", FULL_BODY + "Started 2026-03-05, ends March 19, 2026.", "Freeze", []),
        # Relative dates are only a rule for project memories.
        ("feedback", FULL_BODY + "Seen yesterday.", "Flaky test seen yesterday", []),
        ("reference", "Dashboard updated today.", "Dashboard", []),
    ],
)
def test_it_words_the_edit_form_warnings(memory_type, body, description, expected):
    assert memory_warnings(memory_type, body, description) == expected


def test_a_date_in_both_description_and_body_is_warned_about_once():
    warnings = memory_warnings("project", FULL_BODY + "Ships Tomorrow.", "Ships tomorrow")
    assert warnings == [_relative("tomorrow")]


def test_the_public_surface_is_declared():
    assert sorted(lint.__all__) == [
        "STRUCTURED_TYPES",
        "link_targets",
        "memory_warnings",
        "missing_why_how",
        "near_duplicates",
        "relative_dates",
        "similar_to",
        "unknown_links",
    ]


def test_a_link_may_name_a_memory_or_its_file_name():
    targets = lint.link_targets([("feedback_db.md", "Real DB"), ("team/ci.md", None)])
    assert targets == {"feedback_db", "Real DB", "ci"}
    assert lint.unknown_links(["Real DB", "nope", "ci", "nope", "later"], targets) == [
        "nope",
        "later",
    ]


def test_links_to_no_memory_are_warned_about_only_when_the_store_is_known():
    body = "See [[Real DB]], [[deploy-checklist]] and [[deploy-checklist|the list]]."
    assert memory_warnings("user", body, "d") == []
    assert memory_warnings("user", body, "d", targets={"Real DB"}) == [
        "Link [[deploy-checklist]] names no memory in this store yet."
    ]


def test_similar_to_finds_what_near_duplicates_pairs_with_a_new_description():
    """One description against a store in one pass gives the pairs near_duplicates finds with
    it added last, in the same order, at any threshold."""
    rng = random.Random(14)
    vocabulary = [
        "deploy",
        "fridays",
        "staging",
        "database",
        "mocks",
        "real",
        "tests",
        "never",
        "always",
        "the",
        "a",
    ]
    for _ in range(300):
        items = [
            (f"m{i}.md", " ".join(rng.choices(vocabulary, k=rng.randint(0, 6))))
            for i in range(rng.randint(0, 12))
        ]
        new = " ".join(rng.choices(vocabulary, k=rng.randint(0, 6)))
        threshold = rng.choice([0.3, 0.5, 0.7, 0.8, 0.95])
        pairs = lint.near_duplicates([*items, ("\0new", new)], threshold)
        expected = [a for a, b, _ in pairs if b == "\0new"]
        assert lint.similar_to(new, items, threshold) == expected, (items, new, threshold)
