"""`make bench`: run the stack `make run` runs, on a scratch database, and print each figure beside its reference.

The web, worker and beat processes are started from the Procfile (bin/web, bin/worker, bin/beat),
as `make run` and docker-compose start them. Load comes from separate processes (h2load for the closed
loops, bench/load.py for the open loop where latency is measured), the webhook receiver is a process of
its own (bench/receiver.py), and every reference is measured in the same run: raw stomp.py sends, an
empty authenticated endpoint, wrk's POSTs, and a bare consume–POST–ack loop (bench/bare_loop.py). Figures with
"(1 run)" are one run; the others the median, min and max of three runs (one with `--quick`). `--quick`
(make bench QUICK=1) runs small sizes, the Spark groups beside the delivery stack, to prove the harness
works; only a full run writes docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import signal
import statistics
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench import profile, stack

ROOT = Path(__file__).resolve().parent.parent
# The scratch database and Celery's Redis database; a run beside another one (the suite's quick run) sets its own.
BENCH_DB = os.environ.get("DOVECOTE_BENCH_DB", "dovecote_bench")
_, REPORTS_DB, ARCHIVE_DB = stack.scratch_databases(BENCH_DB)
BENCH_REDIS_DB = os.environ.get("DOVECOTE_BENCH_REDIS_DB", "9")
GROUPS = ("batch", "single", "push", "workers", "latency", "fairness", "retry", "spark", "archive", "failover")
OFFLINE_GROUPS = ("spark", "archive", "failover")  # offline_rows's: no delivery stack
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
        "CELERY_BROKER_URL": f"redis://127.0.0.1:6379/{BENCH_REDIS_DB}",
        "DOVECOTE_PUSH_ALLOW_HOSTS": "127.0.0.1",
        "DOVECOTE_API_RATE": "100000000/min",
        "DOVECOTE_MAX_SUBSCRIPTIONS_PER_ROOM": "1000",  # the fan-out figure's 200 subscriptions share one room
        "DJANGO_SETTINGS_MODULE": "dovecote.settings",
        # bin/web and bin/worker find python and celery on PATH, as under `make run`.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DOVECOTE_HTTPS": "false",  # plain HTTP on this machine (docs/security.md)
        # No report run at five past from beat: it would start a Spark driver on both cores in the middle of
        # whichever group was running. The spark and archive groups measure the report and archive jobs alone.
        "DOVECOTE_HOURLY_JOBS": "false",
    }


def repeat(runs: int, measure: Callable[[], object]) -> list:
    return [measure() for _ in range(runs)]


def column(results: list, index: int) -> tuple[float, float, float]:
    from bench.figures import summary

    return summary([r[index] if isinstance(r, tuple) else r for r in results])


def median_run(results: list) -> tuple:
    """The run whose first figure is the median of the runs' first figures."""
    return sorted(results, key=lambda r: r[0])[len(results) // 2]


def ratio(value: tuple[float, float, float], reference: tuple[float, float, float]) -> str:
    return f"{value[0] / reference[0]:.0%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, the Spark groups beside the delivery stack: to check the harness (< 4 min)")
    parser.add_argument("--profile", action="store_true",
                        help="sample the web and worker processes with py-spy and print where their CPU went "
                             "(bench/profile.py); best with --only one group")
    parser.add_argument("--profile-rate", type=int, default=profile.RATE, metavar="N",
                        help=f"with --profile, py-spy's samples per second and thread (default {profile.RATE}; "
                             "1000 gives a short group's event loop enough samples to read, and slows what it samples)")
    parser.add_argument("--only", type=lambda text: set(text.split(",")), default=set(GROUPS),
                        help=f"run only these groups of figures, comma-separated: {', '.join(GROUPS + EXTRA_GROUPS)} "
                             "(for profiling; the table is written to var/, not docs/)")
    parser.add_argument("--archive-messages", type=int, metavar="N",
                        help="the archive group's generated history: N messages over 30 days (default 1,000,000; "
                             "~2.5 attempt rows each, so 4,100,000 for the reports on 10 M attempt rows); the "
                             "table then goes to var/, not docs/")
    options = parser.parse_args()
    # SIGTERM (kill, a CI timeout) unwinds like Ctrl-C, so the stack started below is stopped too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    quick, only = options.quick, options.only
    if unknown := only - set(GROUPS + EXTRA_GROUPS):
        parser.error(f"--only: unknown group {', '.join(sorted(unknown))} "
                     f"(choose from {', '.join(GROUPS + EXTRA_GROUPS)})")
    for option, value in (("--profile-rate", options.profile_rate), ("--archive-messages", options.archive_messages)):
        if value is not None and value < 1:
            parser.error(f"{option}: {value} is not a positive whole number")
    env = bench_env()
    env = stack.recreate_database(env, BENCH_DB)
    os.environ.update(env)

    import django

    django.setup()
    from tests.fresh_ids import start_ids_after_earlier_databases

    start_ids_after_earlier_databases()  # earlier runs' frames may still sit on the queues of ids 1, 2, …
    from bench import figures, hot
    from bench.receiver import ReceiverClient
    from delivery.broker.stomp import WRITE_CHUNK
    from rooms.models import ApiKey

    # report_messages: generate_traffic writes ~2.48 attempt rows per message (413,000 → 1.02 M).
    n = {"stomp": 1000, "batch": 1000, "single": 400, "push": 600, "hot": 2000, "spread": 40,
         "latency_s": 3, "quiet_s": 2,
         "fairness_subscriptions": 100, "fairness_s": 3, "fanout": 40, "fanout_publishes": 3,
         "retries": 100, "report_messages": 2000,
         "archive_messages": 2000, "archive_days": 8} if quick else \
        {"stomp": 5000, "batch": 5000, "single": 3000, "push": 3000, "hot": 20_000, "spread": 200,
         "latency_s": 10, "quiet_s": 40,
         "fairness_subscriptions": 1000, "fairness_s": 20, "fanout": 200, "fanout_publishes": 10,
         "retries": 1000, "report_messages": 413_000,
         "archive_messages": 1_000_000, "archive_days": 30}
    if options.archive_messages is not None:
        n["archive_messages"] = options.archive_messages
    runs = 1 if quick else 3
    log_dir = Path(tempfile.mkdtemp(prefix="dovecote-bench-"))
    if options.profile:
        stack.PROFILE_DIR = log_dir / "profiles"
        profile.RATE = options.profile_rate
    # The stack's metric files, fresh for this run: web's /metrics adds up the worker's counts from here.
    env["PROMETHEUS_MULTIPROC_DIR"] = str(log_dir / "metrics")
    receiver = ReceiverClient()
    try:
        web, base_url = stack.start_web(env, log_dir)
    except RuntimeError:
        receiver.close()
        raise
    beat = stack.start_beat(env, log_dir)
    worker_count = stack.worker_processes(env)
    processes = {"web": web, "beat": beat, **stack.start_workers(env, log_dir, worker_count)}
    workers = [process for name, process in processes.items() if stack.part(name) == "worker"]  # every one started

    def stop_workers() -> None:
        for name in [name for name in processes if stack.part(name) == "worker"]:
            processes.pop(name).stop()

    def start_workers(wanted: int | None) -> None:
        started = stack.start_workers(env, log_dir, worker_count if wanted is None else wanted, generation=len(workers))
        processes.update(started)
        workers.extend(started.values())

    ctx = figures.Context(base_url, env["STOMP_URL"], ApiKey.issue("bench", is_admin=True)[1], receiver, quick,
                          processes=processes, worker_processes=worker_count, stop_workers=stop_workers,
                          start_workers=start_workers, database=BENCH_DB)
    rows: list[Row] = []
    # Full runs measure the offline groups last, alone, once the delivery stack has stopped; --quick, which
    # only proves that every figure prints, runs each beside it and the others, in a folder of its own (its
    # figures mean nothing anyway; each group spends most of its time waiting on its own processes).
    beside = ThreadPoolExecutor(len(OFFLINE_GROUPS), thread_name_prefix="offline") if quick else None
    offline = [beside.submit(offline_rows, env, folder(log_dir / group), n, only & {group}, runs, quick)
               for group in OFFLINE_GROUPS] if beside is not None else None
    try:
        if "batch" in only:
            raw = repeat(runs, lambda: figures.raw_stomp_sends(ctx, n["stomp"]))
            chunked = repeat(runs, lambda: figures.raw_stomp_sends(ctx, n["stomp"], receipt_every=WRITE_CHUNK))
            batch = repeat(runs, lambda: figures.batch_publish(ctx, n["batch"]))
            rows.append(Row(f"publish, batch API, msg/s until every receipt is in ({n['batch']} msgs)",
                            fmt(column(batch, 0)),
                            f"{fmt(column(raw, 0))} raw stomp.py sends with receipts; {fmt(column(chunked, 0))} "
                            f"with one receipt per {WRITE_CHUNK} frames, as Dovecote asks",
                            f"≥ 60 %: {ratio(column(batch, 0), column(raw, 0))}"))
        if "single" in only:
            single = repeat(runs, lambda: figures.single_publish(ctx, n["single"]))
            empty = repeat(runs, lambda: figures.empty_endpoint(ctx, n["single"]))
            rows.append(Row(f"publish, single-message API, accepted/s, {n['single']} on 64 keep-alive connections "
                            f"(h2load)",
                            fmt(figures.summary([s.rate for s in single])),
                            f"{fmt(column(empty, 0))} empty authenticated endpoint, same server",
                            f"≥ 1,500: {ratio(figures.summary([s.rate for s in single]), column(empty, 0))} of it"))
            rows.append(Row("  latency p50 / p99, ms", f"{figures.summary([s.p50_ms for s in single])[0]:.1f} / "
                            f"{figures.summary([s.p99_ms for s in single])[0]:.1f}",
                            f"{column(empty, 1)[0]:.1f} / {column(empty, 2)[0]:.1f}"))
            parts = sorted(single[0].cpu_by_part)
            load_cpu_ms = statistics.median(s.load_cpu_ms for s in single)
            rows.append(Row("  CPU per delivery, ms, every process (publish to the broker's receipt)",
                            fmt(figures.summary([s.cpu_ms for s in single]), digits=2),
                            "; ".join(f"{part} {statistics.median(s.cpu_by_part[part] for s in single):.2f}"
                                      for part in parts) + f"; not counted: the load generator {load_cpu_ms:.2f}",
                            "≤ 1.5"))
        if "push" in only:
            push = repeat(runs, lambda: figures.push_throughput(ctx, n["push"]))
            bare = repeat(runs, lambda: figures.bare_loop(ctx, n["push"]))
            wrk = repeat(runs, lambda: figures.raw_http_posts(ctx))
            rows.append(Row(f"push, deliveries/s queued → received, one subscription ({n['push']} msgs, 204 at once,"
                            f" each signed, recorded and acked)", fmt(column(push, 0)),
                            f"{fmt(column(bare, 0))} bare consume–POST–ack loop, no database",
                            f"≥ 2,000 and ≥ 50 %: {ratio(column(push, 0), column(bare, 0))}"))
            rows.append(Row("  the same, from /metrics: delivered counter's rate, 10 % → 90 % of the run",
                            fmt(column(push, 3)), f"{fmt(column(push, 0))} measured at the receiver",
                            f"{ratio(column(push, 3), column(push, 0))}"))
            rows.append(Row("  /metrics attempt histogram count = attempt rows in the database",
                            " / ".join(f"{p[4]:.0f}" for p in push), " / ".join(f"{p[5]}" for p in push),
                            "equal" if all(p[4] == p[5] for p in push) else "DIFFERENT"))
            rows.append(Row("  raw POSTs to the same receiver, per s", "—",
                            f"{fmt(column(wrk, 0))} wrk, 64 connections"))
            rows.append(Row(f"  peak RSS of {the_workers(worker_count)} during the push runs, added up, MiB "
                            "(the largest run)",
                            f"{max(p[1] for p in push):.0f}", "—"))
            rows.append(Row("  CPU per delivery, µs", f"{fmt(column(push, 2))} the worker processes",
                            f"{fmt(column(bare, 1))} the bare loop's process"))
            by_process = median_run(push)[7]
            rows.append(Row("  CPU per delivery by process, µs, the median run (10 % → 90 %)",
                            f"{sum(by_process.values()):.0f} in all",
                            "; ".join(f"{name} {by_process[name]:.0f}" for name in sorted(by_process))))
            rows.append(Row("  where a delivery's time went, the median run's rows' clocks (ms; deliveries)",
                            "; ".join(f"{name} {value:.1f}" for name, value in median_run(push)[6].items()),
                            "—"))
        if "workers" in only:
            one = repeat(runs, lambda: hot.hot_subscription(ctx, n["hot"], workers=1))
            every = repeat(runs, lambda: hot.hot_subscription(ctx, n["hot"], workers=worker_count))
            rows.append(Row(f"push, one subscription, the stack's {worker_count} worker processes vs one: deliveries/s "
                            f"once each worker has a session ({n['hot']} msgs queued, max_in_flight 64)",
                            f"{fmt(figures.summary([r.rate for r in every]))} {worker_count} workers "
                            f"({min(r.sessions for r in every)}–{max(r.sessions for r in every)} sessions)",
                            f"{fmt(figures.summary([r.rate for r in one]))} one worker",
                            f"{ratio(figures.summary([r.rate for r in every]), figures.summary([r.rate for r in one]))}"
                            " of one worker's"))
            spread = hot.sessions_per_worker(ctx, n["spread"])
            rows.append(Row(f"push subscriptions over the {worker_count} workers: sessions per worker "
                            f"({n['spread']} subscriptions, 1 run)",
                            " / ".join(str(count) for count in spread), "—"))
        if "latency" in only:
            firsts: list[float] = []
            for rate, target in ((200, "p50 < 10, p99 < 25"), (500, "p99 < 100")):
                fast = repeat(runs, lambda rate=rate: figures.open_loop_latency(ctx, rate, n["latency_s"]))
                firsts += [r.first_ms for r in fast]
                rows.append(Row(f"end-to-end latency, publish → receiver, {rate} msg/s offered open loop "
                                f"({n['latency_s']} s), p50 / p99 ms",
                                f"{fmt(figures.summary([r.p50_ms for r in fast]), digits=1)} / "
                                f"{fmt(figures.summary([r.p99_ms for r in fast]), digits=1)}",
                                f"{min(r.on_time for r in fast):.0%} of publishes left on time (≤ 10 ms late)",
                                target))
                stages = {name: statistics.median(r.stages_ms.get(name, 0.0) for r in fast)
                          for name in fast[0].stages_ms}
                tail = {name: statistics.median(r.tail_stages_ms.get(name, 0.0) for r in fast)
                        for name in fast[0].tail_stages_ms}
                lone = figures.lone_receipts(ctx, rate, n["latency_s"] / 2)
                hop = figures.lone_round_trips(rate, n["latency_s"] / 2)
                rows.append(Row(f"  at {rate} msg/s: publish round trip (request → 202) p99 ms; median ms of each "
                                "step of a delivery (bench/figures.py delivery_stages)",
                                f"{fmt(figures.summary([r.round_trip_p99_ms for r in fast]), digits=1)}",
                                "; ".join(f"{name} {value:.1f}" for name, value in stages.items())
                                + f"; the broker alone, a persistent SEND → its RECEIPT at {rate}/s (1 run): "
                                f"p50 {lone[0]:.1f}, p99 {lone[1]:.1f}; one hop with no work, PostgreSQL's "
                                f"SELECT 1 at {rate}/s (1 run): p50 {hop[0]:.2f}, p99 {hop[1]:.2f}",
                                "round trip p99 < 20" if rate == 200 else ""))
                rows.append(Row(f"  at {rate} msg/s: the slowest 1 % of deliveries (publish → receiver ≥ its p99), "
                                "median ms of each step, the runs' median", "; ".join(
                                    f"{name} {value:.1f}" for name, value in tail.items()), "—"))
            rows.append(Row(f"  a new subscription's first message, publish → receiver, ms (its session's start; one "
                            f"before each of the {len(firsts)} runs above, which measure a subscription that has one)",
                            fmt(figures.summary(firsts), digits=1), "—"))
            slow = figures.open_loop_latency(ctx, 10, 3 * n["latency_s"], quiet_s=n["quiet_s"])
            hop = figures.lone_round_trips(10, n["latency_s"])
            quiet = f"({3 * n['latency_s']} s, after {n['quiet_s']} s quiet)"
            rows.append(Row(f"  at 10 msg/s {quiet}, p50 / p99 ms (1 run)",
                            f"{slow.p50_ms:.1f} / {slow.p99_ms:.1f}", f"{slow.on_time:.0%} left on time; "
                            + "; ".join(f"{name} {value:.1f}" for name, value in slow.stages_ms.items())
                            + f"; one hop with no work, PostgreSQL's SELECT 1 at 10/s: p50 {hop[0]:.2f}, "
                            f"p99 {hop[1]:.2f}",
                            "p99 < 100"))
        if "fairness" in only:
            spread = repeat(runs, lambda: figures.fanout(ctx, n["fanout"], 0.1, n["fanout_publishes"], 0.5))
            rows.append(Row(f"fan-out: {n['fanout']} push subscriptions of one room, 10 % answering after 2 s, "
                            f"{n['fanout_publishes']} publishes 0.5 s apart: the fast ones' p99 ms",
                            fmt(column(spread, 0), digits=1),
                            f"{fmt(column(spread, 1), digits=1)} ms the relay's median, delivery created → receipt;"
                            " the median run's p99 of each step: " + "; ".join(
                                f"{name} {value:.1f}" for name, value in median_run(spread)[2].items()),
                            "p99 < 100"))
            cpu = median_run(spread)[3]
            rows.append(Row(f"  fan-out: CPU ms per publish ({n['fanout']} deliveries) by process, first publish to "
                            "the last fast arrival, the median run", f"{sum(cpu.values()):.1f} in all",
                            "; ".join(f"{name} {cpu[name]:.1f}" for name in sorted(cpu))))
            p50, p99, count, expected = figures.fairness(ctx, n["fairness_subscriptions"], 0.1, 20, n["fairness_s"])
            rows.append(Row(f"fairness: {n['fairness_subscriptions']} push subscriptions, 10 % answering after 2 s, "
                            f"20 events/s to rooms of 10 ({n['fairness_s']} s): the fast ones' p50 / p99 ms (1 run)",
                            f"{p50:.1f} / {p99:.1f} ({count:,} of {expected:,} delivered within 60 s)", "—",
                            "p99 < 250"))
            rows.append(Row(f"  RSS of {the_workers(worker_count)} after the fairness run, added up, MiB (1 run)",
                            f"{figures.worker_rss_mib(ctx):.0f}",
                            "—"))
        if "retry" in only:
            retry = repeat(runs, lambda: figures.redelivery_timing_error(ctx, n["retries"], 200))
            rows.append(Row(f"redelivery timing error (gap − EBR delay of 1 s), {n['retries']} retries at 200 msg/s, "
                            f"p50 / p99 ms",
                            f"{fmt(column(retry, 0), digits=1)} / {fmt(column(retry, 1), digits=1)}", "—", "p99 < 50"))
        if "rates" in only:  # one run each: how latency and retry timing change with the offered rate
            for rate in (25, 50, 100, 300):
                result = figures.open_loop_latency(ctx, rate, n["latency_s"])
                rows.append(Row(f"end-to-end latency at {rate} msg/s, p50 / p99 ms (1 run)",
                                f"{result.p50_ms:.1f} / {result.p99_ms:.1f}", f"{result.on_time:.0%} left on time"))
            for rate in (50, 400):
                p50, p99 = figures.redelivery_timing_error(ctx, n["retries"], rate)
                figure = f"redelivery timing error, {n['retries']} retries at {rate} msg/s, p50 / p99 ms (1 run)"
                rows.append(Row(figure,
                                f"{p50:.1f} / {p99:.1f}", "—"))
        lost = stack.reconnects(web, *workers)
        rows.append(Row("broker reconnects during the run (web and worker logs, 1 count)", str(lost), "—", "0"))
    finally:
        for process in processes.values():
            process.stop()
        receiver.close()
        figures.delete_subscription_queues()
    rows += [row for group in offline for row in group.result()] if offline is not None else \
        offline_rows(env, log_dir, n, only, runs, quick)
    if beside is not None:
        beside.shutdown()
    partial = only != set(GROUPS) or options.archive_messages is not None  # var/, not docs/
    print_and_save(rows, quick, partial=partial, runs=1 if only <= set(EXTRA_GROUPS) else runs)
    if stack.PROFILE_DIR is not None:
        print_profiles(stack.PROFILE_DIR)
    return 0


def offline_rows(env: dict[str, str], log_dir: Path, n: dict[str, int], only: set[str], runs: int,
                 quick: bool) -> list[Row]:
    """The figures that need no delivery stack: the Spark reports, the archive, the broker's failover."""
    from bench import figures

    rows: list[Row] = []
    if "spark" in only:  # Spark takes both cores
        report_env, attempts = figures.report_database(env, REPORTS_DB, n["report_messages"])
        times = repeat(runs, lambda: figures.report_run(report_env, log_dir))
        spark_s = figures.summary([t.spark_s for t in times])
        rows.append(Row(f"Spark report, full run (`run_reports --full`, local[*]) on {attempts:,} attempt rows: "
                        f"wall s; peak RSS MiB (driver + JVM)",
                        f"{fmt(spark_s, digits=1)}; {max(t.spark_peak_mib for t in times):,.0f}",
                        f"{fmt(figures.summary([t.postgres_s for t in times]), digits=1)} s the same aggregates "
                        "in PostgreSQL alone (docs/analytics-postgres.sql)"))
    if "archive" in only:  # one run: retention over 30 days of history, the delivery stack stopped (Spark)
        archive_env, attempts = figures.archive_database(env, ARCHIVE_DB, n["archive_messages"], n["archive_days"])
        # Spark over it all in PostgreSQL is the spark group's figure: --quick (the harness's test) skips it here.
        all_in_postgres = figures.report_run(archive_env, log_dir, spark=not quick)
        moved = figures.archive_run(archive_env, log_dir, idle_s=3 if quick else 30)
        archived_env = {**archive_env, "DOVECOTE_ARCHIVE_URL": str(log_dir / "archive")}  # where archive_run wrote
        from_archive = figures.report_run(archived_env, log_dir, postgres=False)
        rows.append(Row(f"archive: `manage.py archive` over {n['archive_messages']:,} generated messages spread "
                        f"over {n['archive_days']} days (retention 7 days), rows/s to Parquet and out of "
                        f"PostgreSQL (1 run)",
                        f"{moved.rows / moved.seconds:,.0f} ({moved.rows:,} rows of {moved.messages:,} messages "
                        f"in {moved.seconds:.1f} s)", "—"))
        rows.append(Row("  the log tables with their indexes before / after the run (and VACUUM FULL), MiB (1 run)",
                        f"{moved.size_before_mib:,.0f} / {moved.size_after_mib:,.0f}", "—"))
        rows.append(Row("  a publish's database transaction every 20 ms during the run, p99 ms (1 run)",
                        f"{moved.during_p99_ms:.1f}", f"{moved.idle_p99_ms:.1f} before the run"))
        rows.append(Row("  the longest batch's delete transaction (its rows locked), s (1 run)",
                        f"{moved.longest_transaction_s:.2f}", "—"))
        rows.append(Row(f"  reports from the archive + the hot tail: `run_reports --full` after the run, on "
                        f"{attempts:,} attempt rows, a fresh driver (no follower), wall s (1 run)",
                        f"{from_archive.spark_s:.1f}",
                        f"{all_in_postgres.postgres_s:.1f} s the same aggregates in PostgreSQL alone before the run "
                        f"(docs/analytics-postgres.sql)"
                        + (f"; {all_in_postgres.spark_s:.1f} s Spark with it all in PostgreSQL"
                           if all_in_postgres.spark_s else ""), "—"))
        every_s = 2.0 if quick else 30.0  # run_reports --follow's default: 30
        follow = figures.follow_latency(archived_env, log_dir, every_s=every_s, trials=1 if quick else 3)
        rows.append(Row(f"  event → report with `run_reports --follow --every {every_s:g}`: from 200 new messages' "
                        f"commit to a refresh started after it published, s ({len(follow.latencies_s)} writes: "
                        f"median, min–max)", fmt(figures.summary(follow.latencies_s), digits=1), "—", "≤ 60"))
        warm = follow.refreshes_s[1:] or follow.refreshes_s  # --quick writes once: its one refresh started the JVM
        rows.append(Row("  an incremental refresh of the hour those messages changed, the follower's JVM up, wall s "
                        "(the refreshes after the first)", fmt(figures.summary(warm), digits=1),
                        f"{follow.refreshes_s[0]:.1f} s the first, starting the JVM", "≤ 20"))
        rows.append(Row("  reports from the archive + the hot tail: `run_reports --full` handed to the follower "
                        "(`--follow` running, its driver started and warm), on the same rows and the messages "
                        "written since, wall s (1 run)", f"{follow.full_s:.1f}",
                        f"{all_in_postgres.postgres_s:.1f} s PostgreSQL alone; {from_archive.spark_s:.1f} s a fresh "
                        "driver", "≤ PostgreSQL alone"))
    if "failover" in only:  # an Artemis pair of its own (tests/artemis_pair.py), the delivery stack stopped
        takeover = figures.broker_failover(log_dir / "artemis-pair")
        rows.append(Row("broker failover: SIGKILL of the Artemis primary → the backup live; → the first message "
                        "delivered through it, s (1 run)", f"{takeover.live_s:.1f}; {takeover.first_delivery_s:.1f}",
                        f"{takeover.cold_start_s:.1f} s a lone broker's cold start (artemis run → STOMP answers)",
                        "< 10"))
        rows.append(Row("  sends confirmed over the failover / confirmed but never delivered (1 run)",
                        f"{takeover.confirmed} / {takeover.lost}", "—", "0 lost"))
    return rows


def folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def print_profiles(directory: Path) -> None:
    """Print each sampled process's summary, and keep it beside the raw samples (for flame graphs)."""
    from bench.profile import summarize

    for samples in sorted(directory.glob("*.txt")):
        if samples.stem.endswith(".summary"):
            continue
        text = summarize(samples)
        samples.with_suffix(".summary.txt").write_text(text + "\n")
        print(f"\n{text}")
    print(f"\nprofiles (py-spy collapsed stacks, for flamegraph.pl or speedscope): {directory}")


def markdown_table(rows: list[Row], runs: int) -> str:
    """Return the figures as a Markdown table whose header says how many runs each value sums up."""
    measured = (f"median (min–max) of {runs} runs, one run where a figure says (1 run)" if runs > 1
                else "one run")
    lines = [f"| figure | Dovecote: {measured} | reference, same run | target |", "|---|---|---|---|"]
    lines += [f"| {r.figure} | {r.value} | {r.reference} | {r.target} |" for r in rows]
    return "\n".join(lines)


def print_and_save(rows: list[Row], quick: bool, partial: bool, runs: int) -> None:
    table = markdown_table(rows, runs)
    print(table)
    machine = f"{os.cpu_count()} cores, {memory_gib():.0f} GiB, {platform.platform()}"
    measured = (f"{MEASURED[0]}\nMeasured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {machine} by `make bench`"
                f"{' QUICK=1' if quick else ''} (bench/run.py): PostgreSQL 15, Apache Artemis {artemis_version()} "
                f"(STOMP), Redis; web, worker and beat as the Procfile starts them (bin/web: granian {web_shape()} "
                f"threads; bin/worker: {worker_shape()}; bin/beat, without its hourly "
                f"report and archive runs: DOVECOTE_HOURLY_JOBS=false).\n\n{table}\n"
                f"{MEASURED[1]}")
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


def web_shape() -> str:
    """bin/web's processes × threads in this run (dovecote/web.py `shape`)."""
    from dovecote.web import shape

    return "{}×{}".format(*shape())


def the_workers(count: int) -> str:
    """The stack's workers: "the worker", "the 2 workers"."""
    return "the worker" if count == 1 else f"the {count} workers"


def worker_shape() -> str:
    """bin/worker's processes and threads in this run (WORKER_PROCESSES, WORKER_THREADS: their defaults are in
    bench/stack.py and bin/worker)."""
    processes = stack.worker_processes(dict(os.environ))
    return (f"{processes} Celery worker process{'es' if processes > 1 else ''}, "
            f"{os.environ.get('WORKER_THREADS') or 8} threads and a push engine each")


def memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    return 0.0


if __name__ == "__main__":
    sys.exit(main())
