"""Each benchmark figure, and its reference measured the same way on the same machine."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import stomp

from bench.receiver import FastReceiver


@dataclass
class Context:
    base_url: str  # the web server
    stomp_url: str
    admin_key: str
    receiver: FastReceiver
    quick: bool
    restart_worker: Callable[[], None] = field(default=lambda: None)
    stop_worker: Callable[[], None] = field(default=lambda: None)


# 1 KB messages: 200 of them stay under the default 256 KiB body limit.
BATCH = 200


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def event(i: int) -> dict:
    return {"event_type": "bench.event", "event_version": "1", "payload": {"n": i, "pad": "x" * 900}}


# ---- setup through the API itself ------------------------------------------------------------

def make_room(ctx: Context, **settings: object) -> int:
    with httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=30) as client:
        room = client.post("/api/v1/rooms/", json={"name": f"bench-{uuid.uuid4().hex[:8]}", **settings})
        room.raise_for_status()
        room_id = room.json()["id"]
        client.post(f"/api/v1/rooms/{room_id}/event-types/", json={"name": "bench.event", "version": "1"}
                    ).raise_for_status()
    return room_id


def make_subscription(ctx: Context, room_id: int, **fields: object) -> int:
    with httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=30) as client:
        response = client.post(f"/api/v1/rooms/{room_id}/subscriptions/",
                               json={"name": f"s-{uuid.uuid4().hex[:8]}", **fields})
        response.raise_for_status()
        return response.json()["id"]


def count_status(room_id: int, status: str) -> int:
    from delivery.models import Delivery

    return Delivery.objects.filter(message__room_id=room_id, status=status).count()


def wait_until(condition: Callable[[], bool], timeout: float, poll: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the benchmark waited too long")
        time.sleep(poll)


# ---- publish -----------------------------------------------------------------------------------

def raw_stomp_sends(ctx: Context, n: int) -> float:
    """Reference: stomp.py persistent sends to the same broker, all frames then all receipts."""
    url = urlsplit(ctx.stomp_url)
    receipts = threading.Semaphore(0)

    class Listener(stomp.ConnectionListener):
        def on_receipt(self, frame: stomp.utils.Frame) -> None:
            receipts.release()

    conn = stomp.Connection12([(url.hostname, url.port)], auto_decode=False)
    conn.set_listener("bench", Listener())
    conn.connect(url.username, url.password, wait=True)
    destination = f"/queue/bench-raw-{uuid.uuid4().hex}"
    body = b"x" * 1000
    started = time.monotonic()
    for i in range(n):
        conn.send(destination, body, headers={"persistent": "true", "receipt": f"r{i}"})
    for _ in range(n):
        receipts.acquire()
    elapsed = time.monotonic() - started
    conn.disconnect()
    return n / elapsed


def drain(room_id: int, subscription_id: int) -> None:
    """Remove a pull subscription's queue and its frames: nothing consumes them, and the broker outlives the run."""
    from delivery.retire import delete_queue

    delete_queue(f"room-{room_id}::subscription-{subscription_id}")


def batch_publish(ctx: Context, n: int) -> float:
    """Messages/s through the batch API until every broker receipt is in (all deliveries `queued`)."""
    room_id = make_room(ctx)
    subscription_id = make_subscription(ctx, room_id, type="pull")
    batches = [{"messages": [event(i) for i in range(start, min(n, start + BATCH))]} for start in range(0, n, BATCH)]
    started = time.monotonic()
    with httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=60) as client:
        for batch in batches:
            client.post(f"/api/v1/rooms/{room_id}/messages/batch/", json=batch).raise_for_status()
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=120)
    rate = n / (time.monotonic() - started)
    drain(room_id, subscription_id)
    return rate


def concurrent_requests(ctx: Context, n: int, send: Callable[[httpx.Client], None], clients: int = 8
                        ) -> tuple[float, float, float]:
    """Run `send` n times from `clients` threads; return requests/s, p50 ms, p99 ms."""
    latencies: list[float] = []
    per_client = n // clients

    def work() -> None:
        with httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=30) as client:
            for _ in range(per_client):
                t = time.monotonic()
                send(client)
                latencies.append((time.monotonic() - t) * 1000)

    started = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(work) for _ in range(clients)]:
            future.result()
    elapsed = time.monotonic() - started
    return len(latencies) / elapsed, percentile(latencies, 50), percentile(latencies, 99)


def single_publish(ctx: Context, n: int) -> tuple[float, float, float]:
    room_id = make_room(ctx)
    subscription_id = make_subscription(ctx, room_id, type="pull")

    def send(client: httpx.Client) -> None:
        client.post(f"/api/v1/rooms/{room_id}/messages/", json=event(0)).raise_for_status()

    figures = concurrent_requests(ctx, n, send)
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=120)  # all sent, so all drained
    drain(room_id, subscription_id)
    return figures


def empty_endpoint(ctx: Context, n: int) -> tuple[float, float, float]:
    """Reference: GET /api/v1/whoami/, an endpoint that does nothing but authenticate, same server."""
    return concurrent_requests(ctx, n, lambda client: client.get("/api/v1/whoami/").raise_for_status())


# ---- push ----------------------------------------------------------------------------------------

def push_throughput(ctx: Context, n: int) -> float:
    """Deliveries/s from queued to received (the worker starts once all n are queued)."""
    ctx.stop_worker()
    room_id = make_room(ctx)
    make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url, max_in_flight=64, timeout_ms=10_000)
    ctx.receiver.reset()
    with httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=60) as client:
        for start in range(0, n, BATCH):
            batch = {"messages": [event(i) for i in range(start, min(n, start + BATCH))]}
            client.post(f"/api/v1/rooms/{room_id}/messages/batch/", json=batch).raise_for_status()
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=120)
    ctx.restart_worker()
    wait_until(lambda: len(ctx.receiver.arrivals) >= n, timeout=300, poll=0.05)
    arrivals = sorted(a.at for a in ctx.receiver.arrivals)
    return (n - 1) / (arrivals[n - 1] - arrivals[0])


def raw_http_posts(ctx: Context, n: int, concurrency: int = 64) -> float:
    """Reference: keep-alive HTTP/1.1 POSTs of the same size to the same receiver from one asyncio process.

    Written on bare asyncio streams, the fastest a Python process sends POSTs: an HTTP client library
    (httpx.AsyncClient measured 543/s at 1 connection, 176/s at 64) would make the reference its own speed.
    """
    url = urlsplit(ctx.receiver.url)
    body = b"x" * 1100
    request = (f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    async def connection(remaining: list[int]) -> None:
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        try:
            while remaining:
                remaining.pop()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 2"):
                    raise RuntimeError(f"the receiver answered {head[:40]!r}")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
        finally:
            writer.close()

    async def run() -> float:
        remaining = list(range(n))
        started = time.monotonic()
        await asyncio.gather(*(connection(remaining) for _ in range(concurrency)))
        return n / (time.monotonic() - started)

    ctx.receiver.reset()
    rate = asyncio.run(run())
    if len(ctx.receiver.arrivals) != n:
        raise RuntimeError(f"the receiver saw {len(ctx.receiver.arrivals)} of {n} reference POSTs")
    return rate


def end_to_end_latency(ctx: Context, rate: float, seconds: float) -> tuple[float, float]:
    """Publish one message at a time at `rate` per second; return p50 and p99 ms from request to receiver."""
    room_id = make_room(ctx)
    make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url, max_in_flight=64)
    ctx.receiver.reset()
    sent: dict[str, float] = {}
    total = int(rate * seconds)
    started = time.monotonic()

    def publish(i: int, client: httpx.Client) -> None:
        time.sleep(max(0.0, started + i / rate - time.monotonic()))
        t = time.monotonic()
        reply = client.post(f"/api/v1/rooms/{room_id}/messages/", json=event(i))
        sent[reply.json()["message_id"]] = t

    clients = [httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=30) for _ in range(16)]
    with ThreadPoolExecutor(16) as pool:
        for future in [pool.submit(publish, i, clients[i % 16]) for i in range(total)]:
            future.result()
    for client in clients:
        client.close()
    try:
        wait_until(lambda: len(ctx.receiver.arrivals) >= total, timeout=60, poll=0.05)
    except TimeoutError:
        pass  # what has not arrived after a minute counts as a minute late
    arrived = {a.webhook_id: a.at for a in ctx.receiver.arrivals if a.webhook_id in sent and a.attempt == 1}
    deadline = time.monotonic()
    latencies = [(arrived.get(message_id, deadline) - t) * 1000 for message_id, t in sent.items()]
    return percentile(latencies, 50), percentile(latencies, 99)


def redelivery_timing_error(ctx: Context, n: int, delay_ms: int = 1000, rate: int = 50) -> tuple[float, float]:
    """Fail every first attempt; return p50 and p99 of (observed gap − scheduled EBR delay) in ms.

    The messages come at `rate` per second, below push capacity, so the figure is the timing of the
    retries (the broker's scheduled delivery, then the session's hold), not a queue's backlog.
    """
    room_id = make_room(ctx, delivery_delay_ms=delay_ms, delivery_delay_multiplier=1.0, delivery_attempts=1)
    make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url, max_in_flight=64)
    ctx.receiver.reset(lambda webhook_id, attempt: 500 if attempt == 1 else 204)
    size = max(1, rate // 10)
    started = time.monotonic()
    with httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=60) as client:
        for i, start in enumerate(range(0, n, size)):  # a batch every 0.1 s, as retries spread in production
            time.sleep(max(0.0, started + i * 0.1 - time.monotonic()))
            batch = {"messages": [event(j) for j in range(start, min(n, start + size))]}
            client.post(f"/api/v1/rooms/{room_id}/messages/batch/", json=batch).raise_for_status()
    try:
        wait_until(lambda: sum(a.attempt == 2 for a in ctx.receiver.arrivals) >= n, timeout=120, poll=0.05)
    except TimeoutError:
        pass  # report on the retries that came; a missing one shows as a low count in the log
    first = {a.webhook_id: a.at for a in ctx.receiver.arrivals if a.attempt == 1}
    errors = [(a.at - first[a.webhook_id]) * 1000 - delay_ms for a in ctx.receiver.arrivals
              if a.attempt == 2 and a.webhook_id in first]
    ctx.receiver.reset()
    return percentile(errors, 50), percentile(errors, 99)


def summary(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


# ---- reports -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReportTimes:
    spark_s: float  # `manage.py run_reports --full`, wall time, JVM start included
    spark_peak_mib: float  # the driver process and its JVM together
    postgres_s: float  # docs/analytics-postgres.sql through psql


def report_database(env: dict[str, str], messages: int) -> tuple[dict[str, str], int]:
    """Fill a scratch database with `messages` of generated history; return its environment and attempt rows."""
    import psycopg

    from bench.stack import ROOT, recreate_database

    env = recreate_database(env, "dovecote_bench_reports")
    subprocess.run([sys.executable, "manage.py", "generate_traffic", "--messages", str(messages), "--days", "7",
                    "--end", "2026-11-20T00:00:00Z"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        attempts = conn.execute("SELECT count(*) FROM delivery_attempts").fetchone()[0]
    return env, attempts


def report_run(env: dict[str, str], log_dir: Path) -> ReportTimes:
    """One full Spark run of the report jobs, then the same aggregates in PostgreSQL alone."""
    from bench.stack import ROOT, Process

    started = time.monotonic()
    spark = Process("run_reports", [sys.executable, "manage.py", "run_reports", "--full"], env, log_dir)
    if spark.popen.wait() != 0:
        raise RuntimeError(f"run_reports failed:\n{spark.log_path.read_text()[-3000:]}")
    spark_s = time.monotonic() - started
    spark.stop()
    started = time.monotonic()
    subprocess.run(["psql", env["DATABASE_URL"], "-q", "-v", "ON_ERROR_STOP=1", "-f", "docs/analytics-postgres.sql"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return ReportTimes(spark_s, spark.peak_rss_kib / 1024, time.monotonic() - started)
