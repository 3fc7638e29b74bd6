"""The API's throttle per token (memapp.api.auth.TokenRateThrottle): n requests per period,
as a bucket of n refilled evenly over the period, shared by every worker through the cache."""

from __future__ import annotations

import contextvars
from types import SimpleNamespace

import pytest

from memapp.api.auth import TokenRateThrottle, throttle_key
from memapp.stores.warm import begin_request, request_scope

pytestmark = pytest.mark.django_db


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def throttle(clock: Clock, rate: str = "3/min") -> TokenRateThrottle:
    return type("Throttle", (TokenRateThrottle,), {"rate": rate, "timer": clock})()


def allowed(clock: Clock, token: int = 1) -> tuple[bool, float | None]:
    check = throttle(clock)  # a new one per request, as DRF makes them
    request = SimpleNamespace(auth=SimpleNamespace(token_hash=f"{token:064x}"))
    return check.allow_request(request, None), check.wait()


def test_a_token_spends_its_rate_at_once_then_one_each_period_over_n():
    clock = Clock()
    assert [allowed(clock)[0] for _ in range(3)] == [True, True, True]
    refused, wait = allowed(clock)
    assert refused is False and wait == pytest.approx(20)
    assert allowed(clock, token=2)[0] is True  # another token has its own bucket
    clock.now += 19.9
    assert allowed(clock)[0] is False
    clock.now += 0.2
    assert allowed(clock)[0] is True
    assert allowed(clock)[0] is False
    clock.now += 60
    assert [allowed(clock)[0] for _ in range(4)] == [True, True, True, False]


def test_a_bucket_read_ahead_then_spent_by_another_worker_still_holds():
    """The authentication reads the bucket together with the warm stamp; requests answered
    elsewhere meanwhile still count (the write is a compare-and-set, not the value read)."""
    clock = Clock()
    with request_scope():
        begin_request(ahead=[throttle_key(f"{1:064x}")])
        for _ in range(3):  # the rate, spent by another worker after this request read it
            assert contextvars.Context().run(allowed, clock)[0] is True
        assert allowed(clock)[0] is False
