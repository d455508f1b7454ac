"""`make bench`: run the real stack on a scratch database and print each figure beside its reference.

Each figure is the median of 3 runs, with min and max. `--quick` (make bench QUICK=1) runs small
sizes to prove the harness works; only a full run writes docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import stack

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "dovecote_bench"
GROUPS = ("batch", "single", "push", "e2e", "retry", "spark")
EXTRA_GROUPS = ("rates",)  # only with --only: latency and retry timing at other offered rates
MEASURED = ("<!-- make bench writes from here -->", "<!-- to here -->")


@dataclass
class Row:
    figure: str
    value: str
    reference: str
    target: str = ""


def fmt(summary: tuple[float, float, float], unit: str = "", digits: int = 0) -> str:
    median, low, high = summary
    return f"{median:,.{digits}f}{unit} ({low:,.{digits}f}–{high:,.{digits}f})"


def bench_env() -> dict[str, str]:
    """The environment of every process: the services' URLs, with a scratch database and Redis db 9."""
    database = os.environ.get("DATABASE_URL") or "postgres://dovecote:dovecote@127.0.0.1:5432/dovecote"
    return {
        **os.environ,
        "DATABASE_URL": database,  # the scratch databases are made beside it (stack.recreate_database)
        "STOMP_URL": os.environ.get("STOMP_URL", "stomp://dovecote:dovecote@127.0.0.1:61613"),
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/9",
        "DOVECOTE_PUSH_ALLOW_HOSTS": "127.0.0.1",
        "DOVECOTE_API_RATE": "100000000/min",
        "DOVECOTE_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "dovecote.settings",
    }


def repeat(runs: int, measure: Callable[[], object]) -> list:
    return [measure() for _ in range(runs)]


def column(results: list, index: int) -> tuple[float, float, float]:
    from bench.figures import summary

    return summary([r[index] if isinstance(r, tuple) else r for r in results])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the harness (< 2 min)")
    parser.add_argument("--only", type=lambda text: set(text.split(",")), default=set(GROUPS),
                        help=f"run only these groups of figures, comma-separated: {', '.join(GROUPS + EXTRA_GROUPS)} "
                             "(for profiling; the table is written to var/, not docs/)")
    options = parser.parse_args()
    quick, only = options.quick, options.only
    if unknown := only - set(GROUPS + EXTRA_GROUPS):
        parser.error(f"--only: unknown group {', '.join(sorted(unknown))} "
                     f"(choose from {', '.join(GROUPS + EXTRA_GROUPS)})")
    env = bench_env()
    env = stack.recreate_database(env, BENCH_DB)
    os.environ.update(env)

    import django

    django.setup()
    from delivery.maintenance import start_ids_after_earlier_databases

    start_ids_after_earlier_databases()  # earlier runs' frames still sit on the queues of ids 1, 2, …
    from bench import figures
    from bench.receiver import FastReceiver
    from rooms.models import ApiKey

    # report_messages: generate_traffic writes ~2.48 attempt rows per message (413,000 → 1.02 M).
    n = {"stomp": 1000, "batch": 1000, "single": 400, "push": 600, "e2e_s": 2, "retries": 50,
         "report_messages": 2000} if quick else \
        {"stomp": 5000, "batch": 5000, "single": 2000, "push": 3000, "e2e_s": 10, "retries": 500,
         "report_messages": 413_000}
    runs = 3
    log_dir = Path(tempfile.mkdtemp(prefix="dovecote-bench-"))
    receiver = FastReceiver()
    web, base_url = stack.start_web(env, log_dir)
    beat = stack.start_beat(env, log_dir)
    processes = {"worker": stack.start_worker(env, log_dir)}

    def stop_worker() -> None:
        processes["worker"].stop()

    def restart_worker() -> None:
        processes["worker"] = stack.start_worker(env, log_dir, name=f"worker{len(os.listdir(log_dir))}")

    ctx = figures.Context(base_url, env["STOMP_URL"], ApiKey.issue("bench", is_admin=True)[1], receiver, quick,
                          restart_worker=restart_worker, stop_worker=stop_worker)
    rows: list[Row] = []
    try:
        if "batch" in only:
            raw = repeat(runs, lambda: figures.raw_stomp_sends(ctx, n["stomp"]))
            batch = repeat(runs, lambda: figures.batch_publish(ctx, n["batch"]))
            rows.append(Row(f"publish throughput, batch API, msg/s until every receipt is in ({n['batch']} msgs)",
                            fmt(column(batch, 0)), f"{fmt(column(raw, 0))} raw stomp.py sends with receipts",
                            f"≥ 50 %: {column(batch, 0)[0] / column(raw, 0)[0]:.0%}"))
        if "single" in only:
            single = repeat(runs, lambda: figures.single_publish(ctx, n["single"]))
            empty = repeat(runs, lambda: figures.empty_endpoint(ctx, n["single"]))
            rows.append(Row("publish, single-message API, req/s at 8 clients", fmt(column(single, 0)),
                            f"{fmt(column(empty, 0))} empty DRF endpoint, same auth and server"))
            rows.append(Row("  latency p50 / p99, ms", f"{column(single, 1)[0]:.1f} / {column(single, 2)[0]:.1f}",
                            f"{column(empty, 1)[0]:.1f} / {column(empty, 2)[0]:.1f}"))
        if "push" in only:
            web.reset_peak()
            push = repeat(runs, lambda: figures.push_throughput(ctx, n["push"]))
            worker_peak, web_peak = processes["worker"].peak_rss_kib, web.peak_rss_kib
            raw_http = repeat(runs, lambda: figures.raw_http_posts(ctx, n["push"]))
            rows.append(Row(f"push throughput, deliveries/s queued → received ({n['push']} msgs, 204 at once)",
                            fmt(column(push, 0)), f"{fmt(column(raw_http, 0))} raw asyncio POSTs, one process",
                            f"≥ 50 %: {column(push, 0)[0] / column(raw_http, 0)[0]:.0%}"))
            rows.append(Row("peak RSS during the push runs, MiB: web (2 gunicorn workers) / worker",
                            f"{web_peak / 1024:.0f} / {worker_peak / 1024:.0f}", "—"))
        if "e2e" in only:
            e2e = repeat(runs, lambda: figures.end_to_end_latency(ctx, 200, n["e2e_s"]))
            rows.append(Row("end-to-end latency publish → receiver at 200 msg/s, p50 / p99 ms",
                            f"{fmt(column(e2e, 0), digits=1)} / {fmt(column(e2e, 1), digits=1)}", "—",
                            "p50 < 25, p99 < 150"))
        if "retry" in only:
            retry = repeat(runs, lambda: figures.redelivery_timing_error(ctx, n["retries"]))
            rows.append(Row(f"redelivery timing error (gap − EBR delay of 1 s), {n['retries']} retries at 50 msg/s, "
                            "p50 / p99 ms",
                            f"{fmt(column(retry, 0), digits=1)} / {fmt(column(retry, 1), digits=1)}", "—",
                            "p99 < 150"))
        if "rates" in only:  # one run each: how latency and retry timing change with the offered rate
            for rate in (10, 25, 50, 100):
                p50, p99 = figures.end_to_end_latency(ctx, rate, n["e2e_s"])
                rows.append(Row(f"end-to-end latency at {rate} msg/s, p50 / p99 ms (1 run)", f"{p50:.1f} / {p99:.1f}",
                                "—"))
            for rate in (100, 200):
                p50, p99 = figures.redelivery_timing_error(ctx, n["retries"], rate=rate)
                rows.append(Row(f"redelivery timing error, {n['retries']} retries at {rate} msg/s, p50 / p99 ms "
                                "(1 run)", f"{p50:.1f} / {p99:.1f}", "—"))
    finally:
        for process in (web, beat, processes["worker"]):
            process.stop()
        receiver.close()
    if "spark" in only:  # last, with the delivery stack stopped: Spark takes both cores
        report_env, attempts = figures.report_database(env, n["report_messages"])
        times = repeat(1 if quick else runs, lambda: figures.report_run(report_env, log_dir))
        spark_s = figures.summary([t.spark_s for t in times])
        rows.append(Row(f"Spark report, full run (`run_reports --full`, local[*]) on {attempts:,} attempt rows: "
                        "wall s; peak RSS MiB (driver + JVM)",
                        f"{fmt(spark_s, digits=1)}; {max(t.spark_peak_mib for t in times):,.0f}",
                        f"{fmt(figures.summary([t.postgres_s for t in times]), digits=1)} s the same aggregates "
                        "in PostgreSQL alone (docs/analytics-postgres.sql)"))
    print_and_save(rows, quick, partial=only != set(GROUPS), runs=1 if only <= set(EXTRA_GROUPS) else runs)
    return 0


def markdown_table(rows: list[Row], runs: int) -> str:
    """Return the figures as a Markdown table whose header says how many runs each value sums up."""
    measured = f"median (min–max) of {runs} runs" if runs > 1 else "one run"  # `rates` figures are single runs
    lines = [f"| figure | Dovecote: {measured} | reference, same run | target |", "|---|---|---|---|"]
    lines += [f"| {r.figure} | {r.value} | {r.reference} | {r.target} |" for r in rows]
    return "\n".join(lines)


def print_and_save(rows: list[Row], quick: bool, partial: bool, runs: int) -> None:
    table = markdown_table(rows, runs)
    print(table)
    machine = f"{os.cpu_count()} cores, {memory_gib():.0f} GiB, {platform.platform()}"
    measured = (f"{MEASURED[0]}\nMeasured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {machine} by `make bench`"
                f"{' QUICK=1' if quick else ''} (bench/run.py): PostgreSQL 15, Apache Artemis {artemis_version()} (STOMP), "
                f"Redis, gunicorn 2×8 threads, one Celery worker (32 threads) and beat.\n\n{table}\n{MEASURED[1]}")
    target = ROOT / ("var/benchmarks-quick.md" if quick else "var/benchmarks-partial.md" if partial
                     else "docs/benchmarks.md")
    target.parent.mkdir(exist_ok=True)
    # Replace only the measured part: what the page says around it (how to read it) is kept.
    before, after = "# Benchmarks\n\n", "\n"
    if target.exists() and all(marker in (old := target.read_text()) for marker in MEASURED):
        before, rest = old.split(MEASURED[0], 1)
        after = rest.split(MEASURED[1], 1)[1]
    target.write_text(before + measured + after)
    print(f"\nwritten to {target.relative_to(ROOT)}")


def artemis_version() -> str:
    """The broker's own name for itself, from its CONNECTED frame (e.g. 2.40.0)."""
    from delivery.broker import connect

    with connect(bench_env()["STOMP_URL"]) as broker:
        server = getattr(broker, "server", "")
    return server.split()[0].partition("/")[2] if server else "(version unknown)"


def memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    return 0.0


if __name__ == "__main__":
    sys.exit(main())
