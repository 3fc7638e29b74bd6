"""Memory-quality checks shown in the review UI (docs/design.md §2).

A memory's edit form shows warnings for it (`memory_warnings`), and a store's health page lists
problems across memories (`relative_dates`, `missing_why_how`, `near_duplicates`,
`unknown_links`). None of these block a save: they are advice, worded for a person.

The checks favour precision over recall. A warning that fires on ordinary technical prose teaches
people to ignore warnings, so `relative_dates` skips recurring habits ("every Monday",
"Mondays"), weekday ranges ("Monday to Friday"), weekdays attached to an absolute date
("Thursday, March 5, 2026") and everything inside code.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Collection, Hashable, Iterable, Sequence
from functools import lru_cache
from itertools import repeat
from operator import and_, or_
from typing import TypeVar

from memapp.memdir.frontmatter import extract_links
from memapp.memdir.index import MAX_ENTRY_CHARS

__all__ = [
    "STRUCTURED_TYPES",
    "link_targets",
    "memory_warnings",
    "missing_why_how",
    "near_duplicates",
    "similar_to",
    "relative_dates",
    "unknown_links",
]

STRUCTURED_TYPES = ("feedback", "project")
"""Memory types whose bodies should carry **Why:** and **How to apply:** (docs/design.md §2)."""

# --- code masking --------------------------------------------------------------------------

_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_INLINE_CODE = re.compile(
    # A run of N backticks up to the next run of exactly N, within one paragraph (CommonMark).
    r"(?<!`)(?P<ticks>`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)(?P=ticks)(?!`)",
    re.DOTALL,
)
# Stands in for masked code: not a word character and not whitespace, so nothing matches across
# it ("next `x` Tuesday" must not read as "next Tuesday").
_MASK = "\x00"


def _mask_fenced(text: str) -> str:
    """`text` with every fenced code block (fences included) masked, line by line.

    An unclosed fence runs to the end of the text, as in CommonMark.
    """
    out: list[str] = []
    fence = ""
    for line in text.split("\n"):
        if fence:
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) <= 3
                and stripped
                and set(stripped) == {fence[0]}
                and len(stripped) >= len(fence)
            ):
                fence = ""
            out.append(_MASK * len(line))
            continue
        opened = _FENCE_OPEN.match(line)
        # A backtick fence's info string may not contain backticks (that is inline code).
        if opened and not (opened["fence"][0] == "`" and "`" in opened["info"]):
            fence = opened["fence"]
            out.append(_MASK * len(line))
            continue
        out.append(line)
    return "\n".join(out)


def _mask_code(text: str) -> str:
    """`text` with code masked character for character (line breaks kept), so a match's
    offsets are offsets in `text`."""
    return _INLINE_CODE.sub(_mask_span, _mask_fenced(text))


def _mask_span(match: re.Match[str]) -> str:
    return "".join(c if c == "\n" else _MASK for c in match.group())


# --- relative dates ------------------------------------------------------------------------

_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_ABSOLUTE_DATE = (
    r"(?:\d{4}-\d{2}-\d{2}"  # 2026-03-05
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"  # March 5, 2026
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}(?:,?\s+\d{{4}})?)"  # 5 March 2026
)
_DAY_PART = r"(?:\s+(?:morning|afternoon|evening|night))?"
_QUANTITY = (
    r"(?:\d+|a\s+few|a\s+couple(?:\s+of)?|couple\s+of|a|an|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|eleven|twelve|few|several)"
)
_SHORT_UNIT = r"(?:seconds?|minutes?|hours?)"
_LONG_UNIT = r"(?:days?|weeks?|fortnights?|months?|years?)"
_PERIOD = r"(?:week|weekend|fortnight|month|quarter|year|sprint)"
_MODIFIER = r"(?:this\s+(?:past|coming)|this|next|last|past|coming|upcoming)"

# Matched first at any position and then thrown away: forms that mention a day without being a
# relative date.
_NOT_RELATIVE = [
    rf"(?:{_MODIFIER}\s+)?{_WEEKDAY},?\s+(?:the\s+)?{_ABSOLUTE_DATE}",  # Thursday, March 5
    rf"{_ABSOLUTE_DATE},?\s*\(?{_WEEKDAY}\)?",  # 2026-03-05 (Thursday)
    rf"(?:every|each)\s+(?:other\s+|second\s+|alternate\s+)?{_WEEKDAY}",  # every Monday
    rf"{_WEEKDAY}\s*(?:-|–|—|to|through|thru|until)\s*{_WEEKDAY}",  # Monday to Friday
]
_RELATIVE = [
    r"(?:the\s+)?day\s+(?:after\s+tomorrow|before\s+yesterday)",
    r"(?:the\s+)?week\s+after\s+next",
    rf"{_QUANTITY}\s+(?:{_SHORT_UNIT}|{_LONG_UNIT})\s+(?:ago|from\s+(?:now|today|tomorrow))",
    rf"in\s+{_QUANTITY}\s+{_LONG_UNIT}",
    rf"(?:end|start|beginning|middle)\s+of\s+(?:the\s+|this\s+|next\s+|last\s+)?(?:day|{_PERIOD})",
    rf"{_MODIFIER}\s+{_WEEKDAY}{_DAY_PART}",
    rf"{_MODIFIER}\s+(?:{_PERIOD}|morning|afternoon|evening|night)",
    rf"(?:today|tomorrow|yesterday){_DAY_PART}",
    r"tonight",
    r"eod|eow|eom",
    rf"{_WEEKDAY}{_DAY_PART}",
]
_DATE_PATTERN = re.compile(
    r"\b(?:(?P<skip>{})|(?P<hit>{}))\b".format("|".join(_NOT_RELATIVE), "|".join(_RELATIVE)),
    re.IGNORECASE,
)
# Every match is bounded by \b, so plural weekdays ("Mondays") and "weekday" never match.

# Every expression `_RELATIVE` finds holds one of these (a weekday, "today" and "yesterday" hold
# "day"; "weekend" holds "week"; "tonight" and "fortnight" hold "night"), so an ASCII text
# holding none has none: the pattern, tried at every word of a text, costs ~0.5 ms per
# kilobyte, a lowered copy and a few substring searches a hundredth of that (a mirror rescan
# checks every project memory it reads).
_NEEDED_WORDS = (
    "day", "week", "tomorrow", "night", "eod", "eow", "eom", "second", "minute", "hour",
    "month", "quarter", "year", "sprint", "morning", "afternoon", "evening",
)  # fmt: skip


def relative_dates(text: str) -> list[str]:
    """The relative date and time expressions in `text`, as written, in order of appearance.

    Found: today/tonight/tomorrow/yesterday (with an optional "morning", "night"…), "the day after
    tomorrow", weekday names alone or with this/next/last/coming/past ("Thursday",
    "next Tuesday"), this/next/last + a period ("last week", "this morning", "next sprint"),
    "in two weeks", "two days ago", "a week from now", "end of the week", EOD/EOW/EOM.
    "today's API" yields "today".

    Not found: ISO or written-out dates ("2026-03-05", "March 5, 2026"), weekdays attached to one
    ("Thursday, 2026-03-05"), recurring habits ("every Monday", "Mondays are deploy days"),
    weekday ranges ("Monday to Friday"), "weekday", short durations ("in 30 seconds"), and
    anything inside inline code or fenced code blocks.

    Matching ignores case. Runs of whitespace inside a match are shown as one space, and an
    expression repeated (in any case) is listed once, as first written.
    """
    found: list[str] = []
    seen: set[str] = set()
    for _, _, written in relative_date_spans(text):
        expression = " ".join(written.split())
        key = expression.casefold()
        if key not in seen:
            seen.add(key)
            found.append(expression)
    return found


def relative_date_spans(text: str) -> list[tuple[int, int, str]]:
    """Every relative date expression of `text` (as `relative_dates` finds them) as
    `(start, end, expression)`, `text[start:end] == expression`, in order, repeats included:
    what a rewrite needs to replace each one with an absolute date."""
    if text.isascii():  # else IGNORECASE folds more than ASCII letters ("K" for "k")
        lowered = text.lower()
        if not any(word in lowered for word in _NEEDED_WORDS):
            return []
    return [
        (match.start("hit"), match.end("hit"), text[match.start("hit") : match.end("hit")])
        for match in _DATE_PATTERN.finditer(_mask_code(text))
        if match["hit"] is not None
    ]


# --- Why / How to apply --------------------------------------------------------------------


def _label_pattern(words: str) -> re.Pattern[str]:
    # Bold anywhere ("Rule. **Why:** reason", "**Why**: reason"), or plain/emphasised at the
    # start of a line, list item or quote ("Why: reason", "- _How to apply:_ …").
    return re.compile(
        rf"(?P<b>\*\*|__)\s*{words}\s*(?::\s*(?P=b)|(?P=b)\s*:)"
        rf"|^[ \t]*(?:>[ \t]*)?(?:[-*+][ \t]+)?(?:\*\*|__|\*|_)?{words}(?:\*\*|__|\*|_)?[ \t]*:",
        re.IGNORECASE | re.MULTILINE,
    )


_SECTIONS = (
    ("Why", _label_pattern(r"why")),
    ("How to apply", _label_pattern(r"how\s+to\s+apply")),
)


def _normal_type(memory_type: str | None) -> str:
    return (memory_type or "").strip().lower()


def missing_why_how(memory_type: str | None, body: str) -> list[str]:
    """Which of "Why" and "How to apply" a feedback or project body lacks, in that order.

    A label counts when written as `**Why:**` or `**Why**:` (or with `__`) anywhere, or as
    `Why:` / `*Why:*` at the start of a line, list item or quote; case is ignored and labels
    inside code do not count. Other types (and untyped memories) always give [].
    """
    if _normal_type(memory_type) not in STRUCTURED_TYPES:
        return []
    text = _mask_code(body)
    return [label for label, pattern in _SECTIONS if not pattern.search(text)]


# --- near duplicates -----------------------------------------------------------------------

# Function words that carry no meaning on their own. Words that flip or narrow a rule stay in:
# negations ("not", "never", "dont"), "only", and order or direction ("before", "after", "up",
# "down", "off"). Two memories that differ only by such a word score below 1.0 but usually still
# above the threshold, which is wanted: contradictory memories need a reviewer as much as copies.
_STOPWORD_TEXT = """
    a about am an and are as at be because been being between both but by can could did do does
    doing during for from had has have having he her here hers herself him himself his how i if
    in into is it its itself just me my myself of on or our ours ourselves she should so such
    than that the their theirs them themselves then there these they this those through to too
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_APOSTROPHES = re.compile(r"['’]")
_TOKEN = re.compile(r"[^\W_]+")


@lru_cache(maxsize=1 << 14)
def _tokens(description: str) -> tuple[str, ...]:
    """The words of a description that count (a pure function, kept for a store's worth)."""
    text = _APOSTROPHES.sub("", unicodedata.normalize("NFKC", description).casefold())
    return tuple(word for word in _TOKEN.findall(text) if word not in _STOPWORDS)


_Member = TypeVar("_Member", bound=Hashable)  # a word, or a size


def near_duplicates(
    items: Iterable[tuple[str, str]], threshold: float = 0.8
) -> list[tuple[str, str, float]]:
    """Pairs of keys whose descriptions say nearly the same thing, most similar first.

    Each description is normalised: NFKC, case-folded, apostrophes dropped ("don't" → "dont"),
    other punctuation treated as a space, stopwords removed. The similarity of two normalised
    descriptions is the mean of the Jaccard index of their word sets and difflib's ratio of the
    words joined by single spaces. Pairs scoring at least `threshold` are returned as
    `(earlier key, later key, score)`, keys in input order and the score rounded to 4 places,
    sorted by score descending, then by input position. Identical normalised text scores exactly
    1.0. Items whose description is empty after normalisation (None, blank, only stopwords) are
    ignored.

    Only pairs sharing a word are scored, and only those whose Jaccard index can reach the
    threshold (a ratio is at most 1): for each description, the earlier ones sharing enough of
    its words are found all at once, each word's holders a bitmap over the descriptions and
    "holds at least c of these words" counted with bitwise operations, so a store of thousands
    costs a few operations per word rather than one per pair sharing a word.
    """
    keys: list[str] = []
    joined: list[str] = []
    sets: list[frozenset[str]] = []
    for key, description in items:
        words = _tokens(description or "")
        if words:
            keys.append(key)
            joined.append(" ".join(words))
            sets.append(frozenset(words))

    floor = threshold - 1e-9  # (0.6 + 1.0) / 2 must reach a threshold of 0.8
    holders = _bitmaps(sets, 2)  # a word only one description holds pairs it with none
    sizes = _bitmaps([(len(word_set),) for word_set in sets], 1)
    # For each size, the fewest words a description of each size must share with one of it.
    needed = {size: {k: o for k in sizes if (o := _least_shared(size, k, floor))} for size in sizes}
    found: list[tuple[int, int, float]] = []
    for i, word_set in enumerate(sets):
        needs = needed[len(word_set)]
        shared = [has for word in word_set if (has := holders.get(word))]
        if not needs or not shared:
            continue
        top = max(needs.values())
        earlier = (1 << i) - 1  # each pair once, from its later description
        # [c]: the earlier descriptions holding c or more of the words seen so far, each word
        # added to every count at once (the bitwise operations run in C).
        at_least = [earlier] + [0] * top
        for has in shared:
            at_least = [earlier, *map(or_, at_least[1:], map(and_, at_least, repeat(has, top)))]
        candidates = 0
        for k, least in needs.items():
            candidates |= at_least[least] & sizes[k]
        while candidates:
            j = (candidates & -candidates).bit_length() - 1
            candidates &= candidates - 1
            score = _similarity(joined[j], joined[i], floor)
            if score is not None:
                found.append((j, i, score))

    found.sort(key=lambda pair: (-pair[2], pair[0], pair[1]))
    return [(keys[i], keys[j], score) for i, j, score in found]


def _bitmaps(groups: Sequence[Iterable[_Member]], least: int) -> dict[_Member, int]:
    """For each member of the groups held by `least` groups or more, the positions of the
    groups holding it as the bits of an int."""
    positions: dict[_Member, list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        for member in group:
            positions[member].append(i)
    width = (len(groups) + 7) // 8
    bitmaps: dict[_Member, int] = {}
    for member, held in positions.items():
        if len(held) >= least:
            bits = bytearray(width)
            for i in held:
                bits[i >> 3] |= 1 << (i & 7)
            bitmaps[member] = int.from_bytes(bits, "little")
    return bitmaps


def _least_shared(size: int, other: int, floor: float) -> int:
    """The fewest words two word sets of these sizes must share for their Jaccard index to
    let a score reach `floor` (a ratio is at most 1); 0 when none does."""
    for shared in range(1, min(size, other) + 1):
        if (shared / (size + other - shared) + 1) / 2 >= floor:
            return shared
    return 0


@lru_cache(maxsize=1 << 16)
def _similarity(a: str, b: str, floor: float) -> float | None:
    """The score of `near_duplicates` for two normalised descriptions, None below `floor`.
    Kept per pair of texts (a pure function of them): a store's pairs are scored again only
    for the descriptions that changed."""
    if a == b:
        return 1.0
    a_words, b_words = frozenset(a.split(" ")), frozenset(b.split(" "))
    jaccard = len(a_words & b_words) / len(a_words | b_words)
    if (jaccard + 1) / 2 < floor:  # out of reach whatever the ratio
        return None
    # Cheap upper bounds on the ratio first, as difflib computes them (its real_quick_ratio
    # and quick_ratio): most candidates stop here.
    length = len(a) + len(b)
    if (jaccard + 2.0 * min(len(a), len(b)) / length) / 2 < floor:
        return None
    few, many = sorted((Counter(a), Counter(b)), key=len)
    common = sum(map(min, few.values(), map(many.get, few, repeat(0))))
    if (jaccard + 2.0 * common / length) / 2 < floor:
        return None
    score = (jaccard + difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()) / 2
    return round(score, 4) if score >= floor else None


def similar_to(
    description: str, items: Iterable[tuple[str, str]], threshold: float = 0.8
) -> list[str]:
    """The keys of `items` whose description says nearly what `description` says, most similar
    first (then in input order): the pairs `near_duplicates` would give with `description`
    added last, found by comparing it with each item only, so checking one new memory against
    a store costs one pass over it, not every pair in it. Only items sharing a word count."""
    words = _tokens(description or "")
    if not words:
        return []
    joined, word_set = " ".join(words), frozenset(words)
    floor = threshold - 1e-9
    found: list[tuple[float, int, str]] = []
    for position, (key, text) in enumerate(items):
        other = _tokens(text or "")
        other_set = frozenset(other)
        if not other_set & word_set:
            continue
        score = _similarity(" ".join(other), joined, floor)
        if score is not None:
            found.append((-score, position, key))
    return [key for _, _, key in sorted(found)]


# --- edit-form warnings --------------------------------------------------------------------

_SECTION_ADVICE = {
    "Why": "should say why (an incident, a preference)",
    "How to apply": "should say when and where it applies",
}


# --- links -------------------------------------------------------------------------------


def link_targets(memories: Iterable[tuple[str, str | None]]) -> frozenset[str]:
    """What a `[[link]]` in a store may name, from its memories' `(path, name)`: each memory's
    name and its file name without `.md` (docs/design.md §2)."""
    targets: set[str] = set()
    for path, name in memories:
        targets.add(path.rsplit("/", 1)[-1].removesuffix(".md"))
        if name:
            targets.add(name)
    return frozenset(targets)


def unknown_links(links: Iterable[str], targets: Collection[str]) -> list[str]:
    """The link targets that name no memory, in order, each once."""
    return list(dict.fromkeys(link for link in links if link not in targets))


def memory_warnings(
    memory_type: str | None,
    body: str,
    description: str | None = None,
    targets: Collection[str] | None = None,
    team: bool = False,
) -> list[str]:
    """Warnings for a memory's edit form, in this order; [] when there is nothing to say.

    - `User memories are private: …` for a `user` memory in a team store (`team`);
    - `Description is empty: recall relies on it to pick this memory.` when `description` is
      given but blank (None means "not being edited" and is not checked);
    - `Description should be one line.` when it spans lines (a trailing newline is fine);
    - `Description is 612 characters: keep it to one line under ~200 …` when it is longer than
      `MAX_ENTRY_CHARS`, the index entry's own limit (docs/design.md §5);
    - for feedback and project memories, per missing label (see `missing_why_how`), e.g.
      `Missing **Why:** — feedback memories should say why (an incident, a preference).` and
      `Missing **How to apply:** — project memories should say when and where it applies.`;
    - for project memories, per relative date in the description or body (see
      `relative_dates`): `Relative date "next Tuesday": project memories must use absolute dates
      (e.g. 2026-03-05).`;
    - when the store's `targets` are given (see `link_targets`), per `[[link]]` of the body
      that names no memory: `Link [[deploy-checklist]] names no memory in this store yet.`
    """
    warnings: list[str] = []
    if team and _normal_type(memory_type) == "user":
        warnings.append(
            "User memories are private: this one is about a person and should not be in "
            "team memory; move it to its owner's private memory."
        )
    if description is not None:
        text = description.strip()
        if not text:
            warnings.append("Description is empty: recall relies on it to pick this memory.")
        elif "\n" in text or "\r" in text:
            warnings.append("Description should be one line.")
        elif len(text) > MAX_ENTRY_CHARS:
            warnings.append(
                f"Description is {len(text)} characters: keep it to one line under "
                f"~{MAX_ENTRY_CHARS} (it becomes the memory's MEMORY.md line, which agents "
                "load every session); move detail into the body."
            )

    kind = _normal_type(memory_type)
    for label in missing_why_how(kind, body):
        warnings.append(f"Missing **{label}:** — {kind} memories {_SECTION_ADVICE[label]}.")

    if kind == "project":
        # A blank line keeps the two apart: no expression or code span runs across them.
        for expression in relative_dates(f"{description or ''}\n\n{body}"):
            warnings.append(
                f'Relative date "{expression}": project memories must use absolute dates '
                "(e.g. 2026-03-05)."
            )
    if targets is not None:
        for link in unknown_links(extract_links(body), targets):
            warnings.append(f"Link [[{link}]] names no memory in this store yet.")
    return warnings
