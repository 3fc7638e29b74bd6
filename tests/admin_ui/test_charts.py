"""The inline SVG charts: scales people can read, proportions right, every text escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from memapp.web.charts import Series, column_chart, meter, nice_ceiling, stacked_bar

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # also proves it is well-formed XML


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0, 2), (1, 2), (2, 2), (3, 4), (7, 8), (9, 10), (12, 20), (45, 60), (101, 200), (5000, 6000)],
)
def test_the_axis_ends_at_a_round_number(value, ceiling):
    assert nice_ceiling(value) == ceiling


def test_columns_stack_in_proportion_with_a_tooltip_each():
    svg = parse(
        column_chart(
            ["Mar 1", "Mar 2"],
            [Series("pushed", [2, 4], "ok"), Series("failed", [1, 0], "bad")],
            title="Pushes",
            label_every=1,
        )
    )
    bars = svg.findall(f"{SVG}rect")
    assert [b.get("class") for b in bars] == ["c-ok", "c-bad", "c-ok"]
    heights = [float(b.get("height")) for b in bars]
    assert heights[0] * 2 == pytest.approx(heights[2], abs=0.2)  # 2 vs 4 pushes
    assert [b.find(f"{SVG}title").text for b in bars] == [
        "Mar 1: 2 pushed",
        "Mar 1: 1 failed",
        "Mar 2: 4 pushed",
    ]
    assert svg.get("role") == "img" and svg.get("aria-label") == "Pushes"
    assert [t.text for t in svg.findall(f"{SVG}text")] == ["0", "2", "4", "Mar 1", "Mar 2"]


def test_only_every_nth_day_is_labelled_counting_back_from_today():
    labels = [f"d{i}" for i in range(15)]
    svg = parse(column_chart(labels, [Series("n", [1] * 15, "ok")], title="t", label_every=7))
    assert [t.text for t in svg.findall(f"{SVG}text")][3:] == ["d0", "d7", "d14"]


def test_an_empty_chart_still_draws_its_axis():
    svg = parse(column_chart(["a", "b"], [Series("n", [0, 0], "ok")], title="none"))
    assert svg.findall(f"{SVG}rect") == []
    assert [t.text for t in svg.findall(f"{SVG}text")][:3] == ["0", "1", "2"]


def test_a_stacked_bar_splits_its_width_by_share():
    svg = parse(
        stacked_bar([("fresh", 3, "fresh"), ("stale", 1, "stale")], title="ages", width=400)
    )
    track, fresh, stale = svg.findall(f"{SVG}rect")
    assert (float(fresh.get("width")), float(stale.get("width"))) == (300, 100)
    assert stale.find(f"{SVG}title").text == "stale: 1 (25%)"


def test_a_meter_turns_amber_near_its_cap_and_red_over_it():
    def state(value):
        return parse(meter(value, 200, title="lines")).get("class").split()[-1]

    assert [state(10), state(160), state(200), state(250)] == ["ok", "near", "near", "over"]
    over = parse(meter(250, 200, title="lines", width=100))
    assert float(over.findall(f"{SVG}rect")[1].get("width")) == 100  # never past the track


def test_every_text_is_escaped():
    nasty = '<script>alert("x")</script>&'
    for svg in (
        column_chart([nasty], [Series(nasty, [1], "ok")], title=nasty),
        stacked_bar([(nasty, 1, "ok")], title=nasty),
        meter(1, 2, title=nasty),
    ):
        assert "<script>" not in svg and re.search(r"&lt;script&gt;", svg)
        parse(svg)
