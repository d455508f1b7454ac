"""The bench's hot-subscription figures import, and their arithmetic (rate after a mark, sessions per worker) holds."""

from __future__ import annotations

import pytest

from bench import hot, run
from bench.figures import Context


def test_the_rate_is_counted_from_the_mark_to_the_last_arrival() -> None:
    arrivals = [0.0, 5.0, 5.5, 6.0, 6.5, 7.0]  # a slow start, then 2 a second
    assert hot.rate_after(arrivals, 1) == pytest.approx(2.0)
    assert hot.rate_after(list(reversed(arrivals)), 1) == pytest.approx(2.0)  # sorted first
    assert hot.rate_after([1.0], 0) == 0.0
    assert hot.rate_after([1.0, 1.0], 0) == 0.0


def test_sessions_are_counted_per_worker_with_an_idle_worker_as_zero() -> None:
    assert hot.per_worker(["a", "b", "a", "a"], 2) == [3, 1]
    assert hot.per_worker(["a", "a"], 2) == [2, 0]
    assert hot.per_worker([], 2) == [0, 0]


def test_a_figure_that_needs_a_second_worker_says_so_without_one() -> None:
    with pytest.raises(RuntimeError, match="start_worker"):
        hot.another_worker(Context("http://127.0.0.1:1", "stomp://127.0.0.1:1", "key", None, True), "hot0")  # type: ignore[arg-type]


def test_the_workers_group_is_one_of_the_bench_groups() -> None:
    assert "workers" in run.GROUPS
