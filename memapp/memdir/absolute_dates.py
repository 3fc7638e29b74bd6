"""Relative dates made absolute against the date a memory was written (docs/design.md §14.7).

"Next Tuesday" means nothing a month later. Consolidation rewrites each relative expression the
lint finds (`memapp.memdir.lint.relative_date_spans`) into the date it meant on the day the
file was written: `next Tuesday` on 2026-03-05 becomes `Tuesday 2026-03-10`, `yesterday`
`2026-03-04`, `two days ago` `on 2026-03-03`, `next month` `April 2026`. The results are forms
the lint no longer flags. Expressions with no single meaning ("a few days ago", "next sprint")
are left as written and reported, for a person to settle.

A recurring phrase is never pinned to one date: "on-call is thin at the end of the week" is a
rule for every week, not for the week it was written in. So the edge of a period with no
this/next/last ("the end of the week", "end of the month") and any expression in a sentence
that speaks of a habit ("every", "each", "weekly", "on Mondays", "usually", …) are left as
written and reported as recurring.

Weeks run Monday to Sunday; "the end of this week" is its Friday (a working week). "Next
Tuesday" is the first Tuesday after the date, "last Tuesday" the last one before it, and a
weekday alone the first on or after it.
"""

from __future__ import annotations

import calendar
import datetime
import re
from dataclasses import dataclass

from memapp.memdir.lint import relative_date_spans

__all__ = ["Rewrite", "make_dates_absolute"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_PARTS = ("morning", "afternoon", "evening", "night")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_FORWARD = {"next", "coming", "upcoming", "this coming"}
_BACKWARD = {"last", "past", "this past"}
_MODIFIER = r"(?P<mod>this coming|this past|this|next|last|past|coming|upcoming)"


@dataclass(frozen=True)
class Rewrite:
    """One relative expression and what it became (None: left as written). `one_day`: the
    expression names one day ("tomorrow", "next Tuesday", "two days ago"), so its date is
    sure enough to be ticked for a reviewer; `recurring`: left because it recurs."""

    expression: str
    replacement: str | None
    one_day: bool = False
    recurring: bool = False


def _iso(day: datetime.date) -> str:
    return day.isoformat()


def _named(day: datetime.date) -> str:
    return f"{_WEEKDAYS[day.weekday()].capitalize()} {day.isoformat()}"


def _monday(day: datetime.date) -> datetime.date:
    return day - datetime.timedelta(days=day.weekday())


def _add_months(day: datetime.date, months: int) -> datetime.date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return datetime.date(year, month + 1, min(day.day, last))


def _month_end(day: datetime.date) -> datetime.date:
    return day.replace(day=calendar.monthrange(day.year, day.month)[1])


def _quarter_start(day: datetime.date) -> datetime.date:
    return datetime.date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def _shift(mod: str) -> int:
    if mod in _FORWARD:
        return 1
    if mod in _BACKWARD:
        return -1
    return 0


def _weekday(name: str, mod: str, on: datetime.date) -> datetime.date:
    target = _WEEKDAYS.index(name)
    if mod in _FORWARD:
        return on + datetime.timedelta(days=(target - on.weekday() - 1) % 7 + 1)
    if mod in _BACKWARD:
        return on - datetime.timedelta(days=(on.weekday() - target - 1) % 7 + 1)
    if mod == "this":
        return _monday(on) + datetime.timedelta(days=target)
    return on + datetime.timedelta(days=(target - on.weekday()) % 7)


def _with_part(day: datetime.date, part: str | None) -> str:
    return f"the {part} of {_iso(day)}" if part else _iso(day)


def _period(period: str, shift: int, on: datetime.date) -> str | None:
    if period == "week":
        return f"the week of {_iso(_monday(on) + datetime.timedelta(weeks=shift))}"
    if period == "weekend":
        saturday = _monday(on) + datetime.timedelta(days=5, weeks=shift)
        return f"the weekend of {_iso(saturday)}"
    if period == "month":
        return f"{_add_months(on.replace(day=1), shift):%B %Y}"
    if period == "quarter":
        start = _add_months(_quarter_start(on), 3 * shift)
        return f"Q{(start.month - 1) // 3 + 1} {start.year}"
    if period == "year":
        return str(on.year + shift)
    return None  # a fortnight, a sprint: no calendar says where they start


def _edge(edge: str, period: str, shift: int, on: datetime.date) -> str | None:
    """The start, middle or end of a period (`end of next month`)."""
    if period == "day":
        day = on + datetime.timedelta(days=shift)
        return f"{'end' if edge == 'end' else 'start'} of {_iso(day)}"
    if period == "week":
        monday = _monday(on) + datetime.timedelta(weeks=shift)
        offset = {"end": 4, "middle": 2}.get(edge, 0)
        return _named(monday + datetime.timedelta(days=offset))
    if period == "month":
        first = _add_months(on.replace(day=1), shift)
        return _iso({"end": _month_end(first), "middle": first.replace(day=15)}.get(edge, first))
    if period == "quarter":
        first = _add_months(_quarter_start(on), 3 * shift)
        if edge == "end":
            return _iso(_month_end(_add_months(first, 2)))
        return _iso(_add_months(first, 1).replace(day=15) if edge == "middle" else first)
    if period == "year":
        year = on.year + shift
        dates = {"end": (12, 31), "middle": (7, 1)}
        return _iso(datetime.date(year, *dates.get(edge, (1, 1))))
    return None


def _amount(quantity: str, unit: str, sign: int, on: datetime.date) -> datetime.date | None:
    count = int(quantity) if quantity.isdigit() else _NUMBERS.get(quantity)
    if count is None:
        return None  # "a few", "several": no single date
    unit = unit.rstrip("s")
    if unit in ("second", "minute", "hour"):
        return on
    if unit == "day":
        return on + datetime.timedelta(days=sign * count)
    if unit in ("week", "fortnight"):
        return on + datetime.timedelta(weeks=sign * count * (2 if unit == "fortnight" else 1))
    if unit == "month":
        return _add_months(on, sign * count)
    return _add_months(on, sign * 12 * count)


_PART = rf"(?:\s+(?P<part>{'|'.join(_DAY_PARTS)}))?"
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"(?P<day>today|tomorrow|yesterday){_PART}"), "day"),
    (re.compile(r"tonight"), "tonight"),
    (re.compile(r"(?:the )?day (?P<which>after tomorrow|before yesterday)"), "two_days"),
    (re.compile(r"(?:the )?week after next"), "week_after_next"),
    (
        re.compile(
            r"(?P<q>\d+|a few|a couple(?: of)?|couple of|a|an|one|two|three|four|five|six|seven"
            r"|eight|nine|ten|eleven|twelve|few|several) (?P<unit>\w+) (?P<dir>ago|from now|"
            r"from today|from tomorrow)"
        ),
        "ago",
    ),
    (re.compile(r"in (?P<q>\S+(?: few| couple(?: of)?)?) (?P<unit>\w+)"), "in"),
    (
        re.compile(
            r"(?P<edge>end|start|beginning|middle) of (?:(?:the|this) |(?P<mod>next|last) )?"
            r"(?P<period>\w+)"
        ),
        "edge",
    ),
    (re.compile(rf"{_MODIFIER} (?P<name>{'|'.join(_WEEKDAYS)}){_PART}"), "mod_weekday"),
    (re.compile(rf"{_MODIFIER} (?P<period>{'|'.join(_DAY_PARTS)})"), "mod_part"),
    (re.compile(rf"{_MODIFIER} (?P<period>\w+)"), "mod_period"),
    (re.compile(r"eod|eow|eom"), "abbreviation"),
    (re.compile(rf"(?P<name>{'|'.join(_WEEKDAYS)}){_PART}"), "weekday"),
]


_ONE_DAY_RULES = {"day", "tonight", "two_days", "mod_weekday", "weekday"}
_SMALL_UNITS = ("second", "minute", "hour", "day")
# Words of a sentence that speaks of a habit, not of one occasion.
_HABIT = re.compile(
    r"\b(?:every|each|weekly|daily|nightly|monthly|quarterly|yearly|annually|fortnightly"
    r"|biweekly|always|usually|typically|normally|generally|routinely|regularly|often"
    rf"|(?:{'|'.join(_WEEKDAYS)}|weekend|weekday|morning|afternoon|evening|night)s"
    r"|per\s+(?:day|week|month|sprint|quarter|year)"
    r"|once\s+an?\s+(?:day|week|month|sprint|quarter|year))\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.;!?\n]")


def _rewrite(expression: str, on: datetime.date) -> Rewrite:
    text = " ".join(expression.lower().split())
    for pattern, rule in _RULES:
        match = pattern.fullmatch(text)
        if match is None:
            continue
        if rule == "edge" and not match["mod"] and " this " not in f" {text} ":
            return Rewrite(expression, None, recurring=True)  # "the end of the week"
        small = rule in ("ago", "in") and match["unit"].rstrip("s") in _SMALL_UNITS
        one_day = rule in _ONE_DAY_RULES or small
        return Rewrite(expression, _apply(rule, match, on), one_day=one_day)
    return Rewrite(expression, None)


def _in_habit(text: str, start: int, end: int) -> bool:
    """Whether the sentence around `text[start:end]` speaks of a habit."""
    begins = [m.end() for m in _SENTENCE_END.finditer(text, 0, start)]
    ends = _SENTENCE_END.search(text, end)
    sentence = text[begins[-1] if begins else 0 : ends.start() if ends else len(text)]
    return bool(_HABIT.search(sentence))


def _apply(rule: str, m: re.Match[str], on: datetime.date) -> str | None:
    one = datetime.timedelta(days=1)
    if rule == "day":
        day = on + {"today": 0 * one, "tomorrow": one, "yesterday": -one}[m["day"]]
        return _with_part(day, m["part"])
    if rule == "tonight":
        return _with_part(on, "night")
    if rule == "two_days":
        return _iso(on + (2 * one if m["which"].startswith("after") else -2 * one))
    if rule == "week_after_next":
        return f"the week of {_iso(_monday(on) + datetime.timedelta(weeks=2))}"
    if rule in ("ago", "in"):
        start = on + one if rule == "ago" and m["dir"] == "from tomorrow" else on
        sign = -1 if rule == "ago" and m["dir"] == "ago" else 1
        moved = _amount(m["q"], m["unit"], sign, start)
        return None if moved is None else f"on {_iso(moved)}"
    if rule == "edge":
        return _edge(m["edge"], m["period"], _shift(m["mod"] or ""), on)
    if rule == "mod_weekday":
        day = _weekday(m["name"], m["mod"], on)
        return _named(day) + (f" ({m['part']})" if m["part"] else "")
    if rule == "mod_part":
        return _with_part(on + _shift(m["mod"]) * one, m["period"])
    if rule == "mod_period":
        return _period(m["period"], _shift(m["mod"]), on)
    if rule == "abbreviation":
        friday = _monday(on) + datetime.timedelta(days=4)
        return {"eod": f"end of {_iso(on)}", "eow": _named(friday), "eom": _iso(_month_end(on))}[
            m.group()
        ]
    return _named(_weekday(m["name"], "", on)) + (f" ({m['part']})" if m["part"] else "")


_THE = re.compile(r"\bthe\s+\Z", re.IGNORECASE)
_EDGE = re.compile(r"(?:end|start|beginning|middle)\b", re.IGNORECASE)


def make_dates_absolute(text: str, on: datetime.date) -> tuple[str, list[Rewrite]]:
    """`text` with each relative date expression (outside code) replaced by the absolute date
    it meant when written on `on`, and what was done to each, in order of appearance (those
    left as written, recurring ones included, have no replacement)."""
    rewrites = []
    pieces = []
    last = 0
    for start, end, expression in relative_date_spans(text):
        if _in_habit(text, start, end):
            rewrite = Rewrite(expression, None, recurring=True)
        else:
            rewrite = _rewrite(expression, on)
        rewrites.append(rewrite)
        replacement = rewrite.replacement
        article = _THE.search(text, last, start)
        if replacement and article and (replacement.startswith("the ") or _EDGE.match(expression)):
            start = article.start()  # "the end of the month" becomes a date, not "the <date>"
        pieces.append(text[last:start])
        pieces.append(expression if replacement is None else replacement)
        last = end
    pieces.append(text[last:])
    return "".join(pieces), rewrites
