"""memapp.api.quick_checks answers as the serializer does whenever it answers: a body it accepts
validates to the same data, and it accepts the bodies agents send."""

from __future__ import annotations

import random

import pytest
from rest_framework.exceptions import ValidationError

from memapp.api import serializers as s
from memapp.api.quick_checks import quick_validated
from memapp.bench.web import recall_payloads

SERIALIZERS = [s.RecallSerializer, s.PromptSerializer]
# Values each field may be sent, plain and not: other types, blanks, padding, limits, NULs,
# lone surrogates, numbers where strings go.
VALUES = [
    "acme/app",
    "app",
    " acme/app",
    "acme/app\n",
    "",
    "   ",
    "x\x00y",
    "\ud800",
    "é café",
    "a" * 200,
    "a" * 201,
    "a" * 255,
    "a" * 256,
    "q" * 20_000,
    "q" * 20_001,
    "../etc",
    "both",
    "private",
    "team",
    "user",
    "local",
    "agent",
    None,
    True,
    0,
    -1,
    5,
    600_000,
    600_001,
    1.5,
    [],
    ["Bash"],
    ["Bash", " Read"],
    [""],
    [None],
    [1],
    ["x"] * 101,
    {"a": 1},
]


def serializer_answer(serializer_class, data):
    try:
        return dict(s.validated(serializer_class, data))
    except ValidationError:
        return "invalid"


def bodies(serializer_class, count: int, seed: int) -> list:
    names = list(serializer_class().fields)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        body = {"project": "acme/app", "query": "which database"}
        for name in rng.sample(names, rng.randint(0, len(names))):
            body[name] = rng.choice(VALUES)
        if rng.random() < 0.3:
            body.pop(rng.choice(list(body)))
        if rng.random() < 0.05:
            body["limit"] = 3
        out.append(body)
    return out


@pytest.mark.parametrize("serializer_class", SERIALIZERS)
def test_what_it_accepts_validates_to_what_the_serializer_gives(serializer_class):
    accepted = 0
    for body in bodies(serializer_class, 3000, seed=serializer_class.__name__.__len__()):
        quick = quick_validated(serializer_class, body)
        if quick is not None:
            accepted += 1
            assert quick == serializer_answer(serializer_class, body), body
    assert accepted > 100  # not a check that never answers


@pytest.mark.parametrize("body", [[1], "x", None, {}])
def test_what_is_not_an_object_is_left_to_the_serializer(body):
    assert quick_validated(s.RecallSerializer, body) is None


def test_the_bodies_agents_send_are_accepted():
    for body in recall_payloads("acme/app", ["a.md", "b.md"], count=200):
        body = {**body, "session_id": "s-1", "wait_ms": 1500}
        assert quick_validated(s.RecallSerializer, body) == serializer_answer(
            s.RecallSerializer, body
        )
    prompt = {"project": "acme/app", "project_dirname": "-home-alice-app", "agent_type": "codex"}
    assert quick_validated(s.PromptSerializer, prompt) == serializer_answer(
        s.PromptSerializer, prompt
    )
