"""The EBR formula of docs/contract.md#redelivery at its edges."""

from __future__ import annotations

import pytest

from subscriptions.retry import LONGEST_DELAY_MS, RetryPolicy


def test_the_contract_example_gives_3000_then_4500_ms() -> None:
    policy = RetryPolicy(delay_ms=2000, multiplier=1.5, attempts=5)
    assert policy.delay_after(1) == 3000
    assert policy.delay_after(2) == 4500


def test_the_issue_example_schedules_400_800_1600_ms() -> None:
    assert RetryPolicy(delay_ms=200, multiplier=2, attempts=3).schedule() == [400, 800, 1600]


def test_zero_attempts_means_no_redelivery() -> None:
    policy = RetryPolicy(delay_ms=1000, multiplier=2, attempts=0)
    assert policy.schedule() == []
    assert not policy.can_retry(1)


def test_the_last_allowed_attempt_may_not_be_retried() -> None:
    policy = RetryPolicy(delay_ms=1000, multiplier=2, attempts=3)
    assert [policy.can_retry(k) for k in (1, 2, 3, 4)] == [True, True, True, False]


def test_the_cap_bounds_every_delay() -> None:
    policy = RetryPolicy(delay_ms=1000, multiplier=10, attempts=4, max_delay_ms=50_000)
    assert policy.schedule() == [10_000, 50_000, 50_000, 50_000]


def test_a_cap_below_the_first_delay_applies_from_the_first_retry() -> None:
    assert RetryPolicy(delay_ms=5000, multiplier=2, attempts=2, max_delay_ms=1000).schedule() == [1000, 1000]


def test_multiplier_one_gives_a_constant_delay() -> None:
    assert RetryPolicy(delay_ms=750, multiplier=1, attempts=4).schedule() == [750] * 4


def test_zero_delay_retries_at_once() -> None:
    assert RetryPolicy(delay_ms=0, multiplier=3, attempts=2).schedule() == [0, 0]


def test_an_uncapped_huge_exponent_is_clamped_not_overflowed() -> None:
    policy = RetryPolicy(delay_ms=1000, multiplier=10, attempts=5000)
    assert policy.delay_after(5000) == LONGEST_DELAY_MS


@pytest.mark.parametrize("attempt", [0, -1])
def test_attempt_numbers_start_at_one(attempt: int) -> None:
    with pytest.raises(ValueError, match="attempt must be 1 or more"):
        RetryPolicy(delay_ms=1000, multiplier=2, attempts=3).delay_after(attempt)
