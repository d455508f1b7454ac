"""`make bench QUICK=1` works: the harness runs against the real services and prints every row.

It asserts that the harness ran and produced each figure, never a speed: speed is `make bench`'s job.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import redis_url, stomp_url

ROOT = Path(__file__).resolve().parent.parent
ROWS = [
    "publish, batch API",
    "publish, single-message API",
    "latency p50 / p99",
    "push, deliveries/s queued → received",
    "raw POSTs to the same receiver",
    "worker peak RSS",
    "end-to-end latency",
    "at 10 msg/s",
    "fairness:",
    "worker RSS after the fairness run",
    "redelivery timing error",
    "broker reconnects",
    "Spark report, full run",
]


@pytest.mark.slow
def test_the_quick_benchmark_runs_and_prints_every_figure() -> None:
    stomp_url()
    redis_url()
    # Its own scratch database and Redis database: a `make bench` may run on the same machine.
    env = {**os.environ, "DOVECOTE_BENCH_DB": f"dovecote_bench_quick{os.environ.get('TEST_RUN_NAME', '')}",
           "DOVECOTE_BENCH_REDIS_DB": "8"}
    result = subprocess.run([sys.executable, "-m", "bench.run", "--quick"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    table = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    for row in ROWS:
        assert any(line.startswith(f"| {row}") or line.startswith(f"|   {row}") for line in table), row
    assert all(line.count("|") == 5 for line in table)
    assert (ROOT / "var" / "benchmarks-quick.md").read_text().count("\n| ") == len(table)
