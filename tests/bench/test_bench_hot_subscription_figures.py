"""The bench's hot-subscription figures import, and their arithmetic (rate after a mark, sessions per worker) holds."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench import hot, run, stack
from bench.figures import Context
from bench.stack import ROOT


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


def test_the_workers_are_the_processes_named_for_the_procfiles_worker_entry() -> None:
    processes = {name: SimpleNamespace(name=name) for name in ("web", "beat", "worker.1", "worker.2")}
    ctx = Context("http://127.0.0.1:1", "stomp://127.0.0.1:1", "key", None, True,  # type: ignore[arg-type]
                  processes=processes)  # type: ignore[arg-type]
    assert [process.name for process in ctx.workers()] == ["worker.1", "worker.2"]


def test_the_stack_runs_as_many_workers_as_make_run_and_docker_compose() -> None:
    """WORKER_PROCESSES' default is written in the Makefile, docker-compose.yml and bench/stack.py: one value."""
    makefile = (ROOT / "Makefile").read_text()
    compose = (ROOT / "docker-compose.yml").read_text()
    default = stack.worker_processes({})
    assert f'-c "worker=$${{WORKER_PROCESSES:-{default}}}"' in makefile
    assert f"replicas: ${{WORKER_PROCESSES:-{default}}}" in compose
    assert stack.worker_processes({"WORKER_PROCESSES": "3"}) == 3


def test_the_workers_group_is_one_of_the_bench_groups() -> None:
    assert "workers" in run.GROUPS
