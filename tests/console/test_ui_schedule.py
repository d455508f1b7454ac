"""The retry-schedule preview's arithmetic: cumulative times, the cap, the expiration cut, durations."""

from __future__ import annotations

import pytest

from console.schedule import schedule, summary
from console.text import duration
from subscriptions.retry import RetryPolicy


def test_each_redelivery_starts_after_the_sum_of_the_delays_before_it() -> None:
    plan = schedule(RetryPolicy(delay_ms=2000, multiplier=1.5, attempts=3), None)
    assert [(r.attempt, r.delay_ms, r.at_ms) for r in plan.redeliveries] == [(2, 3000, 3000), (3, 4500, 7500),
                                                                            (4, 6750, 14250)]
    assert plan.cut is None and plan.attempts == 4 and plan.ends_at == "14.25 s"


def test_the_cap_is_marked_where_it_sets_the_delay() -> None:
    plan = schedule(RetryPolicy(delay_ms=1000, multiplier=3, attempts=3, max_delay_ms=5000), None)
    assert [(r.delay_ms, r.capped) for r in plan.redeliveries] == [(3000, False), (5000, True), (5000, True)]


def test_the_expiration_cuts_off_the_redeliveries_that_would_start_after_it() -> None:
    plan = schedule(RetryPolicy(delay_ms=1000, multiplier=2, attempts=5), 10_000)
    assert [r.after_expiry for r in plan.redeliveries] == [False, False, True, True, True]
    assert plan.expires_after_attempt == 3 and plan.attempts == 3
    assert [r.number for r in plan.shown] == [1, 2, 3] and plan.not_shown == 2


def test_no_redelivery_means_one_attempt() -> None:
    plan = schedule(RetryPolicy(delay_ms=1000, multiplier=2, attempts=0), 5000)
    assert plan.redeliveries == [] and plan.attempts == 1 and plan.ends_at == "0 ms"


@pytest.mark.parametrize(("ms", "text"), [(0, "0 ms"), (250, "250 ms"), (1500, "1.5 s"), (1234, "1.23 s"),
                                          (65_000, "1 min 5 s"), (3_600_000, "1 h"), (90_061_000, "1 day 1 h"),
                                          (432_000_000, "5 days")])
def test_durations_read_in_the_two_largest_units(ms: int, text: str) -> None:
    assert duration(ms) == text


def test_a_policy_reads_in_a_few_words() -> None:
    assert summary(RetryPolicy(2000, 1.5, 5, 60_000)) == "5 redeliveries from 2 s, ×1.5, cap 1 min"
    assert summary(RetryPolicy(500, 1.0, 1)) == "1 redelivery from 500 ms, fixed"
    assert summary(RetryPolicy(500, 2.0, 0)) == "no redelivery"
