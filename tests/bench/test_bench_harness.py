"""`make bench QUICK=1` works: the harness runs against the real services and prints every row.

It asserts that the harness ran and produced each figure, never a speed: speed is `make bench`'s job.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.stack import drop_databases, scratch_databases
from tests.services import redis_url, stomp_url

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    "publish, batch API",
    "publish, single-message API",
    "latency p50 / p99",
    "CPU per delivery, ms, every process",
    "push, deliveries/s queued → received",
    "the same, from /metrics",
    "/metrics attempt histogram count = attempt rows",
    "raw POSTs to the same receiver",
    "push, one subscription, the stack's",
    "push subscriptions over the",
    "peak RSS of the",
    "CPU per delivery by process, µs",
    "where a delivery's time went",
    "end-to-end latency",
    "at 200 msg/s: publish round trip",
    "at 500 msg/s: publish round trip",
    "at 200 msg/s: the slowest 1 % of deliveries",
    "at 500 msg/s: the slowest 1 % of deliveries",
    "a new subscription's first message",
    "at 10 msg/s",
    "fan-out: ",
    "fan-out: CPU ms per publish",
    "fairness:",
    "RSS of the",
    "redelivery timing error",
    "broker reconnects",
    "Spark report, full run",
    "archive: `manage.py archive`",
    "the log tables with their indexes before / after",
    "a publish's database transaction every 20 ms during the run",
    "the longest batch's delete transaction",
    "reports from the archive + the hot tail",
    "event → report with `run_reports --follow",
    "an incremental refresh of the hour those messages changed",
    "reports from the archive + the hot tail: `run_reports --full` handed to the follower",
    "broker failover: SIGKILL of the Artemis primary",
    "sends confirmed over the failover",
]


@pytest.mark.slow
def test_the_quick_benchmark_runs_and_prints_every_figure() -> None:
    stomp_url()
    redis_url()
    # Its own scratch database and Redis database: a `make bench` may run on the same machine.
    database = f"dovecote_bench_quick{os.environ.get('TEST_RUN_NAME', '')}"
    env = {**os.environ, "DOVECOTE_BENCH_DB": database, "DOVECOTE_BENCH_REDIS_DB": "8"}
    try:
        result = subprocess.run([sys.executable, "-m", "bench.run", "--quick"], cwd=ROOT, capture_output=True,
                                text=True, timeout=600, env=env, check=False)
    finally:  # ~75 MB each, left by every run of the suite before
        dropped = drop_databases(env, scratch_databases(database))
    assert dropped == sorted(scratch_databases(database)), dropped
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    table = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    for row in ROWS:
        assert any(line.startswith((f"| {row}", f"|   {row}")) for line in table), row
    assert all(line.count("|") == 5 for line in table)
    assert (ROOT / "var" / "benchmarks-quick.md").read_text().count("\n| ") == len(table)


def test_a_table_of_single_runs_does_not_claim_medians() -> None:
    from bench.run import Row, markdown_table

    rows = [Row("end-to-end latency at 10 msg/s, p50 / p99 ms (1 run)", "29.2 / 313.4", "—")]
    header = "| figure | Dovecote: one run | reference, same run | target |"
    assert markdown_table(rows, runs=1).splitlines()[0] == header
    assert "median (min–max) of 3 runs" in markdown_table(rows, runs=3).splitlines()[0]


def test_the_benchmark_page_says_median_only_over_tables_of_repeated_runs() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    for table in page.split("\n\n"):
        lines = [line for line in table.splitlines() if line.startswith("| ")]
        figures = list(lines[2:])
        if figures and all("(1 run)" in line for line in figures):
            assert "median" not in lines[0], lines[0]


@pytest.mark.parametrize("option", ["--archive-messages", "--profile-rate"])
def test_a_size_or_rate_below_one_is_refused_by_name_before_anything_starts(option: str) -> None:
    result = subprocess.run([sys.executable, "-m", "bench.run", option, "0"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert f"{option}: 0 is not a positive whole number" in result.stderr, result.stderr
