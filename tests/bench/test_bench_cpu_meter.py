"""The bench's CPU meter counts each process's CPU from `start` to `stop`, whatever came and went between.

It summed each part's processes at both ends: when a PostgreSQL backend of the bench's database
closed during a run (a client recycling its connection), its whole life's CPU left the sum, and the
fan-out's row said PostgreSQL used 0.0 ms a publish (`BENCH_ARGS="--only push,fairness"`, 06:34).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import stack
from bench.stack import CpuMeter

BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\ntime.sleep(60)"


def burner(seconds: float) -> subprocess.Popen[bytes]:
    """A process that uses `seconds` of CPU, then sleeps."""
    return subprocess.Popen([sys.executable, "-c", BURN.format(seconds=seconds)])


def cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_cpu(pid: int, seconds: float) -> None:
    deadline = time.monotonic() + 60
    while cpu(pid) < seconds:
        assert time.monotonic() < deadline, f"process {pid} used {cpu(pid)} s of CPU, waited for {seconds}"
        time.sleep(0.05)


def test_a_backend_that_ends_between_start_and_stop_takes_no_cpu_from_the_others(monkeypatch) -> None:
    old, steady = burner(1.0), burner(0.0)
    late = None
    try:
        wait_for_cpu(old.pid, 1.0)
        parts = {"postgres": [old.pid, steady.pid]}
        monkeypatch.setattr(stack, "service_pids", lambda database: {name: list(pids) for name, pids in parts.items()})
        meter = CpuMeter({}, "bench")
        meter.start()
        steady_before = cpu(steady.pid)  # it may still be starting up
        old.kill()
        old.wait()
        late = burner(0.3)  # a backend that opened meanwhile: all of its CPU is the run's
        parts["postgres"] = [steady.pid, late.pid]
        wait_for_cpu(late.pid, 0.3)
        used = meter.stop()["postgres"]
        expected = cpu(late.pid) + cpu(steady.pid) - steady_before
        assert used == pytest.approx(expected, abs=0.05), (
            f"counted {used} s, expected {expected}: the new backend used {cpu(late.pid)} s, the steady one "
            f"{cpu(steady.pid) - steady_before} s; the one that ended had used 1 s before the start")
    finally:
        for process in (old, steady, late):
            if process is not None:
                process.kill()
                process.wait()


def test_the_worker_processes_count_as_one_part(monkeypatch) -> None:
    """`make run` starts WORKER_PROCESSES workers (worker.1, worker.2): the rows' `worker` is all of them."""
    first, second = burner(0.3), burner(0.3)
    try:
        monkeypatch.setattr(stack, "service_pids", lambda database: {})
        processes = {name: SimpleNamespace(popen=popen) for name, popen in (("worker.1", first), ("worker.2", second))}
        meter = CpuMeter(processes, "bench")  # type: ignore[arg-type]
        meter.start()
        before = cpu(first.pid) + cpu(second.pid)
        wait_for_cpu(first.pid, 0.3)
        wait_for_cpu(second.pid, 0.3)
        used = meter.stop()
        assert set(used) == {"worker"}, used
        after = cpu(first.pid) + cpu(second.pid)
        assert used["worker"] == pytest.approx(after - before, abs=0.05), (
            f"counted {used['worker']} s; the two processes used {after - before} s between start and stop")
    finally:
        for process in (first, second):
            process.kill()
            process.wait()
