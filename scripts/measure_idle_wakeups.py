"""Measure what a quiet spell costs one round trip to PostgreSQL on this machine: back to back, then with gaps.

A publish at a low rate finds every process on its path asleep. This times one committed INSERT on
PostgreSQL (autocommit, as the publish's group statement is) over and over, first back to back, then
with a pause between them as at 20 publishes a second, and prints the medians
(docs/benchmarks.md quotes them):

    set -a; . var/services.env; set +a; .venv/bin/python scripts/measure_idle_wakeups.py [--runs 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import psycopg

TABLE = "dovecote_measure_idle_wakeups"


def median_ms(conn: psycopg.Connection, runs: int, gap_s: float) -> float:
    times = []
    for _ in range(runs):
        time.sleep(gap_s)
        started = time.perf_counter()
        conn.execute(f"INSERT INTO {TABLE} (at) VALUES (now())")
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    runs = parser.parse_args().runs
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        # A table of its own (a temporary one writes no WAL, so its commits would wait for no disk).
        conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigserial PRIMARY KEY, at timestamptz)")
        try:
            median_ms(conn, 20, 0.0)  # warm up
            for gap_s in (0.0, 0.005, 0.05):
                print(f"committed INSERT, {gap_s * 1000:.0f} ms between: median {median_ms(conn, runs, gap_s):.3f} ms")
        finally:
            conn.execute(f"DROP TABLE {TABLE}")


if __name__ == "__main__":
    main()
