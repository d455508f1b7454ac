"""Each benchmark figure, and its reference measured the same way on the same machine in the same run."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import stomp

from bench.receiver import Arrival, ReceiverClient
from bench.stack import ROOT, CpuMeter, Process, part, rss_kib


@dataclass
class Context:
    base_url: str  # the web server
    stomp_url: str
    admin_key: str
    receiver: ReceiverClient
    quick: bool
    processes: dict[str, Process] = field(default_factory=dict)  # by name, as honcho names them: worker.1, …
    worker_processes: int = 2  # how many the stack runs (WORKER_PROCESSES, as `make run`)
    stop_workers: Callable[[], None] = field(default=lambda: None)
    # Start this many worker processes (None: worker_processes) in place of the stopped ones.
    start_workers: Callable[[int | None], None] = field(default=lambda count=None: None)
    database: str = "dovecote_bench"  # the scratch database: its PostgreSQL backends' CPU is counted

    def workers(self) -> list[Process]:
        """The worker processes running now."""
        return [process for name, process in self.processes.items() if part(name) == "worker"]


# 1 KB messages: 200 of them stay under the default 256 KiB body limit.
BATCH = 200
PAD = "x" * 900


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def summary(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def event(i: int) -> dict:
    return {"event_type": "bench.event", "event_version": "1", "payload": {"n": i, "pad": PAD}}


def api(ctx: Context) -> httpx.Client:
    return httpx.Client(base_url=ctx.base_url, headers=headers(ctx.admin_key), timeout=60)


# ---- setup through the API itself ------------------------------------------------------------

def make_room(ctx: Context, **settings: object) -> int:
    with api(ctx) as client:
        room = client.post("/api/v1/rooms/", json={"name": f"bench-{uuid.uuid4().hex[:8]}", **settings})
        room.raise_for_status()
        room_id = room.json()["id"]
        client.post(f"/api/v1/rooms/{room_id}/event-types/", json={"name": "bench.event", "version": "1"}
                    ).raise_for_status()
    return room_id


def make_subscription(ctx: Context, room_id: int, **fields: object) -> int:
    with api(ctx) as client:
        response = client.post(f"/api/v1/rooms/{room_id}/subscriptions/",
                               json={"name": f"s-{uuid.uuid4().hex[:8]}", **fields})
        response.raise_for_status()
        return response.json()["id"]


def drop_subscription(ctx: Context, subscription_id: int) -> None:
    """Delete a subscription nothing reads any more as its user would: its deliveries dead-lettered, its queue gone.

    Deleting only its queue left the deliveries `queued` without frames, and beat's watchdog sent
    them all again, 500 every 10 s, through the groups measured after it.
    """
    with api(ctx) as client:
        client.delete(f"/api/v1/subscriptions/{subscription_id}/").raise_for_status()


def count_status(room_id: int, status: str) -> int:
    from delivery.models import Delivery

    return Delivery.objects.filter(message__room_id=room_id, status=status).count()


def wait_until(condition: Callable[[], bool], timeout: float, poll: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True


def publish_batches(ctx: Context, room_id: int, n: int) -> None:
    with api(ctx) as client:
        for start in range(0, n, BATCH):
            batch = {"messages": [event(i) for i in range(start, min(n, start + BATCH))]}
            client.post(f"/api/v1/rooms/{room_id}/messages/batch/", json=batch).raise_for_status()


def delete_queue(destination: str) -> bool:
    """Remove a queue and its frames: nothing consumes them, and the broker outlives the run."""
    from delivery.broker.shared import shared_broker

    return shared_broker().delete_queue(destination)


def delete_subscription_queues() -> int:
    """Remove the queue of every subscription of the run's database, with the frames left on it; return how many.

    The broker outlives the scratch database: the slow receivers' backlogs, the hot group's 20,000
    frames and every subscription's queue stayed in the shared Artemis after each run (459,325 frames
    on 2,380 queues after a day of runs, until its 2 GB heap ran out mid-run).
    """
    from delivery.broker.base import BrokerError
    from subscriptions.models import Subscription

    deleted = 0
    for subscription in Subscription.objects.only("pk", "room_id").iterator():
        try:
            deleted += delete_queue(subscription.destination)
        except BrokerError as error:
            print(f"bench: left the queue {subscription.destination} ({error})", file=sys.stderr)
    return deleted


def run_tool(*args: str, timeout: float = 300) -> str:
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout


# ---- publish -----------------------------------------------------------------------------------

def raw_connection(ctx: Context, on_receipt: Callable[[str], None]) -> stomp.Connection12:
    """A plain stomp.py connection to the run's broker, outside Dovecote's broker layer; each receipt's id goes to
    `on_receipt`."""
    url = urlsplit(ctx.stomp_url)

    class Listener(stomp.ConnectionListener):
        def on_receipt(self, frame: stomp.utils.Frame) -> None:
            on_receipt(frame.headers["receipt-id"])

    conn = stomp.Connection12([(url.hostname, url.port)], auto_decode=False)
    conn.set_listener("bench", Listener())
    conn.connect(url.username, url.password, wait=True)
    return conn


def raw_stomp_sends(ctx: Context, n: int, receipt_every: int = 1) -> float:
    """Reference: stomp.py persistent sends to the same broker, all frames then all receipts.

    A receipt on every frame, or with `receipt_every` on each such frame and the last, as Dovecote's
    `send_many` asks for one per chunk (Artemis answers it once the frames before it are stored too).
    """
    receipts = threading.Semaphore(0)
    conn = raw_connection(ctx, lambda _: receipts.release())
    destination = f"bench-raw::bench-raw-{uuid.uuid4().hex}"
    body = b"x" * 1000
    asked = [i for i in range(n) if (i + 1) % receipt_every == 0 or i == n - 1]
    receipt_at = set(asked)
    started = time.monotonic()
    for i in range(n):
        headers = {"persistent": "true", "destination-type": "ANYCAST"}
        if i in receipt_at:
            headers["receipt"] = f"r{i}"
        conn.send(destination, body, headers=headers)
    for _ in asked:
        receipts.acquire()
    elapsed = time.monotonic() - started
    conn.disconnect()
    delete_queue(destination)
    return n / elapsed


def lone_receipts(ctx: Context, rate: float, seconds: float) -> tuple[float, float]:
    """Reference: one persistent SEND at a time at `rate` per second, open loop; SEND → its RECEIPT p50 and p99 ms.

    The broker's own share of a delivery's "row → receipt" step: its journal write at the offered rate.
    """
    receipts: dict[str, float] = {}
    conn = raw_connection(ctx, lambda receipt: receipts.__setitem__(receipt, time.monotonic()))
    destination = f"bench-raw::bench-lone-{uuid.uuid4().hex}"
    body = b"x" * 1000
    sent: dict[str, float] = {}
    started = time.monotonic()
    for i in range(int(rate * seconds)):
        time.sleep(max(0.0, started + i / rate - time.monotonic()))
        sent[f"r{i}"] = time.monotonic()
        conn.send(destination, body, headers={"persistent": "true", "receipt": f"r{i}", "destination-type": "ANYCAST"})
    complete = wait_until(lambda: len(receipts) >= len(sent), timeout=30)
    conn.disconnect()
    delete_queue(destination)
    if not complete:
        raise RuntimeError(f"{len(sent) - len(receipts)} of {len(sent)} receipts never came")
    waits = [(receipts[rid] - at) * 1000 for rid, at in sent.items()]
    return percentile(waits, 50), percentile(waits, 99)


def lone_round_trips(rate: float, seconds: float) -> tuple[float, float]:
    """Reference: PostgreSQL's `SELECT 1` once every 1/`rate` s, open loop; its round trip p50 and p99 ms.

    The cost of one hop between two processes at that rate, with no work in it: a process that slept
    since the last message wakes slowly on this VM (a vCPU that halted waits for the host), so every
    hop of a delivery (web, PostgreSQL, broker, worker, receiver) pays it.
    """
    waits: list[float] = []
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("SELECT 1")
        started = time.monotonic()
        for i in range(int(rate * seconds)):
            time.sleep(max(0.0, started + i / rate - time.monotonic()))
            sent = time.monotonic()
            conn.execute("SELECT 1")
            waits.append((time.monotonic() - sent) * 1000)
    return percentile(waits, 50), percentile(waits, 99)


def batch_publish(ctx: Context, n: int) -> float:
    """Messages/s through the batch API until every broker receipt is in (all deliveries `queued`)."""
    room_id = make_room(ctx)
    subscription_id = make_subscription(ctx, room_id, type="pull")
    started = time.monotonic()
    publish_batches(ctx, room_id, n)
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=120, poll=0.01)
    rate = n / (time.monotonic() - started)
    drop_subscription(ctx, subscription_id)
    return rate


def closed_loop(ctx: Context, path: str, body: dict | None, clients: int,
                n: int) -> tuple[float, float, float, float]:
    """Requests/s, p50 and p99 ms of `n` requests from `clients` keep-alive connections, each sending one request
    after another (a POST of `body`, or a GET); also the load generator's CPU ms a request. Every request must
    get a 2xx.

    The load is h2load's (nghttp2, in C) over HTTP/1.1: 0.03 ms of CPU a request where the bench's own aiohttp
    client took 0.16, on the two cores the stack runs on (docs/benchmarks.md, "The closed loop's load from h2load").
    """
    if shutil.which("h2load") is None:
        raise RuntimeError("h2load is not installed (make bench installs it: apt-get install nghttp2-client)")
    scratch = Path(tempfile.mkdtemp())
    command = ["h2load", "--h1", "-n", str(n), "-c", str(clients), "-t", "1", "--log-file", str(scratch / "log"),
               "-H", f"Authorization: Bearer {ctx.admin_key}", "-H", "Content-Type: application/json"]
    if body is not None:
        (scratch / "body").write_bytes(json.dumps(body).encode())
        command += ["-d", str(scratch / "body")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*command, ctx.base_url + path], capture_output=True, text=True, timeout=300, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_cpu_ms = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000 / n
    log = scratch / "log"
    rows = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    shutil.rmtree(scratch)
    refused = [status for _, status, _ in rows if not status.startswith("2")]
    if done.returncode != 0 or len(rows) != n or refused:
        raise RuntimeError(f"h2load: {len(rows)} of {n} requests answered, {len(refused)} not 2xx "
                           f"({sorted(set(refused))[:5]}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    starts = [int(start) for start, _, _ in rows]
    ends = [int(start) + int(took) for start, _, took in rows]
    latencies = [int(took) / 1000 for _, _, took in rows]
    return n / ((max(ends) - min(starts)) / 1e6), percentile(latencies, 50), percentile(latencies, 99), load_cpu_ms


@dataclass(frozen=True)
class SinglePublish:
    rate: float  # publishes accepted per s
    p50_ms: float
    p99_ms: float
    cpu_ms: float  # CPU per delivery, every process of the path (web, worker, beat, PostgreSQL, Artemis, Redis)
    web_cpu_ms: float  # the web process's part of it
    cpu_by_part: dict[str, float]  # ms per delivery, by process
    load_cpu_ms: float  # the load generator's CPU per request (not in cpu_ms)


def single_publish(ctx: Context, n: int, clients: int = 64) -> SinglePublish:
    """A closed-loop burst of `n` single publishes on `clients` keep-alive connections, to a pull subscription.

    The CPU is counted from the first publish until the broker confirmed every frame (all `queued`).
    """
    room_id = make_room(ctx)
    subscription_id = make_subscription(ctx, room_id, type="pull")
    meter = CpuMeter(ctx.processes, ctx.database)
    meter.start()
    rate, p50, p99, load_cpu_ms = closed_loop(ctx, f"/api/v1/rooms/{room_id}/messages/", event(0), clients, n)
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=120)
    used = meter.stop()
    drop_subscription(ctx, subscription_id)
    by_part = {name: seconds * 1000 / n for name, seconds in used.items()}
    return SinglePublish(rate, p50, p99, sum(by_part.values()), by_part.get("web", 0.0), by_part, load_cpu_ms)


def empty_endpoint(ctx: Context, n: int, clients: int = 64) -> tuple[float, float, float, float]:
    """Reference: GET /api/v1/whoami/, an endpoint that does nothing but authenticate, same server."""
    return closed_loop(ctx, "/api/v1/whoami/", None, clients, n)


# ---- push ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scrape:
    """What GET /metrics said of one room at one moment."""

    at: float  # time.monotonic()
    delivered: float  # dovecote_deliveries_delivered_total{path="push"}
    attempts: float  # dovecote_push_attempt_duration_seconds_count


def scrape(ctx: Context, room_id: int) -> Scrape:
    """Scrape the web's /metrics (from loopback, which may) and read the room's delivered counter and attempt count."""
    from prometheus_client.parser import text_string_to_metric_families

    asked = time.monotonic()
    with urllib.request.urlopen(f"{ctx.base_url}/metrics", timeout=30) as response:
        text = response.read().decode()
    at = (asked + time.monotonic()) / 2
    delivered = attempts = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("room") != str(room_id):
                continue
            if sample.name == "dovecote_deliveries_delivered_total" and sample.labels.get("path") == "push":
                delivered += sample.value
            elif sample.name == "dovecote_push_attempt_duration_seconds_count":
                attempts += sample.value
    return Scrape(at, delivered, attempts)


def attempt_rows(room_id: int) -> int:
    from delivery.models import DeliveryAttempt

    return DeliveryAttempt.objects.filter(delivery__message__room_id=room_id).count()


def push_throughput(ctx: Context, n: int) -> tuple[float, float, float, float, float, int, dict[str, float],
                                                  dict[str, float]]:
    """Deliveries/s from queued to received, one subscription (the workers start once all n are queued).

    Also returns the workers' peak RSS in MiB during the run (added up), and their CPU time per delivery in µs,
    in the steady state: from the 10th to the 90th percent of the deliveries (start-up left out);
    and what /metrics said meanwhile: the delivered counter's rate between scrapes at those two
    points, and at the end the attempt histogram's count beside the attempt rows in the database;
    and where a delivery's time went, from the rows' clocks (`push_steps`); and every process's CPU time per
    delivery in µs over the same steady state, the receiver's included.
    """
    ctx.stop_workers()
    room_id = make_room(ctx)
    make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url(), max_in_flight=64, timeout_ms=10_000)
    publish_batches(ctx, room_id, n)
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=120)
    ctx.receiver.reset()
    ctx.start_workers(None)
    marks: list[int] = []  # deliveries received at 10 % and at 90 %, where the meter starts and stops
    scrapes: list[Scrape] = []
    meter = CpuMeter(ctx.processes, ctx.database, {"receiver": ctx.receiver.process.pid})

    def progress() -> bool:
        count = ctx.receiver.count()
        if (not marks and count >= n // 10) or (len(marks) == 1 and count >= n * 9 // 10):
            marks.append(count)
            if len(marks) == 1:
                meter.start()
            else:
                meter.stop()
            scrapes.append(scrape(ctx, room_id))
        return count >= n

    wait_until(progress, timeout=300, poll=0.02)
    arrivals = sorted(a[0] for a in ctx.receiver.arrivals())
    wait_until(lambda: count_status(room_id, "delivered") >= n, timeout=60)  # every one recorded too
    deliveries = max(1, marks[1] - marks[0]) if len(marks) == 2 else 1
    by_process = {name: seconds / deliveries * 1e6 for name, seconds in meter.used.items()}
    cpu_us = by_process.get("worker", 0.0)
    scraped_rate = ((scrapes[1].delivered - scrapes[0].delivered) / (scrapes[1].at - scrapes[0].at)
                    if len(scrapes) == 2 else 0.0)
    final = scrape(ctx, room_id)
    return ((n - 1) / (arrivals[n - 1] - arrivals[0]), sum(w.peak_rss_kib for w in ctx.workers()) / 1024, cpu_us,
            scraped_rate, final.attempts, attempt_rows(room_id), push_steps(room_id), by_process)


def push_steps(room_id: int) -> dict[str, float]:
    """Where the room's successful first attempts spent their time, from the rows' clocks.

    An attempt's start is its claim's time and its delivery's `updated_at` the time its record statement
    was made, so claim → record less the POST's own duration is the wait for the POST (rate limit,
    signing) and for the record statement; also the deliveries each claim and each record statement took.
    """
    from delivery.models import DeliveryAttempt

    rows = list(DeliveryAttempt.objects.filter(delivery__message__room_id=room_id, attempt=1, outcome="success")
                .values_list("started_at", "duration_ms", "delivery__updated_at"))
    if not rows:
        return {}
    rest = [((recorded - started).total_seconds() * 1000 - duration) for started, duration, recorded in rows]
    return {"POST p50": percentile([float(duration) for _, duration, _ in rows], 50),
            "claim → record less the POST p50": percentile(rest, 50),
            "p99": percentile(rest, 99),
            "deliveries per claim statement": len(rows) / len({started for started, _, _ in rows}),
            "per record statement": len(rows) / len({recorded for _, _, recorded in rows})}


def bare_loop(ctx: Context, n: int) -> tuple[float, float]:
    """Reference: one process consuming the same frames from the broker, POSTing them and acking; no database.

    Also returns its CPU time per delivery in µs.
    """
    room_id = make_room(ctx)
    subscription_id = make_subscription(ctx, room_id, type="pull")  # its queue fills, nothing else reads it
    publish_batches(ctx, room_id, n)
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=120)
    ctx.receiver.reset()
    destination = f"room-{room_id}::subscription-{subscription_id}"
    cpu_s = float(run_tool("bench.bare_loop", ctx.stomp_url, destination, str(n), ctx.receiver.url(), "64"))
    cpu_us = cpu_s / n * 1e6
    arrivals = sorted(a[0] for a in ctx.receiver.arrivals())
    drop_subscription(ctx, subscription_id)  # its deliveries stayed `queued`: the bare loop took their frames
    return (n - 1) / (arrivals[n - 1] - arrivals[0]), cpu_us


def raw_http_posts(ctx: Context, seconds: int = 5, connections: int = 64) -> float:
    """Reference: wrk, the fastest HTTP client on the machine, POSTing 1 KB bodies to the same receiver."""
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (make bench installs it: apt-get install wrk)")
    script = Path(tempfile.mkdtemp()) / "post.lua"
    script.write_text('wrk.method = "POST"\nwrk.body = string.rep("x", 1100)\n'
                      'wrk.headers["Content-Type"] = "application/json"\n')
    ctx.receiver.reset()
    done = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), ctx.receiver.url()],
                          capture_output=True, text=True, timeout=seconds + 30, check=True)
    match = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
    if match is None:
        raise RuntimeError(f"wrk printed no rate:\n{done.stdout}")
    ctx.receiver.reset()
    return float(match.group(1))


# ---- latency -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p99_ms: float
    on_time: float  # the share of publishes that left within 10 ms of their schedule
    sent: int
    round_trip_p99_ms: float = 0.0  # publish request sent → its 202 answered
    stages_ms: dict[str, float] = field(default_factory=dict)  # the median of each step of a delivery
    tail_stages_ms: dict[str, float] = field(default_factory=dict)  # the same over the slowest 1 % of deliveries
    first_ms: float = 0.0  # the new subscription's first message, publish → receiver (its session's start)


def delivery_stages(room_id: int, sends: list[list], arrived: dict[str, float]) -> tuple[dict[str, float],
                                                                                       dict[str, float]]:
    """Where a delivery's time went: the median of each step, then the same over the slowest 1 % of deliveries.

    From the load tool's, the rows' and the receiver's clocks, all this machine's: the load tool's and the
    receiver's monotonic times are turned into wall time by one offset. request → row: the request's send to
    the message row's creation (the server's queue, the request's checks); row → 202: the group commit and
    the answer; row → receipt: to the broker's receipt for the delivery's frame (the relay); receipt → claim:
    the broker to the worker's session and its claim of the attempt; claim → receiver: signing and the POST's
    way to the receiver. The slowest 1 % (publish → receiver at or above its p99) also get schedule → request,
    the load tool's own lateness: their medians say in which step the p99 lives.
    """
    from delivery.models import DeliveryAttempt, SendRecord

    wall = time.time() - time.monotonic()
    by_message = {s[2]: s for s in sends if s[2]}
    receipts = dict(SendRecord.objects.filter(delivery__message__room_id=room_id, attempt=1)
                    .values_list("delivery_id", "sent_at"))
    rows = DeliveryAttempt.objects.filter(delivery__message__room_id=room_id, attempt=1).values_list(
        "delivery_id", "delivery__message_id", "delivery__created_at", "started_at")
    names = ("request → row", "row → 202", "row → receipt", "receipt → claim", "claim → receiver")
    stages: dict[str, list[float]] = {name: [] for name in names}
    each: list[tuple[float, dict[str, float]]] = []  # (publish → receiver, its steps) of the deliveries that arrived
    for delivery_id, message_id, created_at, started_at in rows:
        created, started = created_at.timestamp(), started_at.timestamp()
        steps: dict[str, float] = {}
        if (send := by_message.get(str(message_id))) is not None:
            steps["schedule → request"] = (send[1] - send[0]) * 1000
            steps["request → row"] = (created - (send[1] + wall)) * 1000
            steps["row → 202"] = (send[4] + wall - created) * 1000
        if delivery_id in receipts:
            steps["row → receipt"] = (receipts[delivery_id].timestamp() - created) * 1000
            steps["receipt → claim"] = (started - receipts[delivery_id].timestamp()) * 1000
        if str(message_id) in arrived:
            steps["claim → receiver"] = (arrived[str(message_id)] + wall - started) * 1000
            if send is not None:
                each.append(((arrived[str(message_id)] - send[0]) * 1000, steps))
        for name in names:
            if name in steps:
                stages[name].append(steps[name])
    medians = {name: statistics.median(values) for name, values in stages.items() if values}
    if not each:
        return medians, {}
    threshold = percentile([total for total, _ in each], 99)
    slowest = [steps for total, steps in each if total >= threshold]
    tail = {name: statistics.median(steps.get(name, 0.0) for steps in slowest)
            for name in ("schedule → request", *names)}
    return medians, tail


def open_loop_latency(ctx: Context, rate: float, seconds: float, *, quiet_s: float = 0.0) -> Latency:
    """Publish one message at a time at `rate` per second, open loop; latency from the scheduled send to the receiver.

    The new subscription gets one message first, which starts its session (`first_ms`, its own figure), and the
    run measures a subscription that has one, as the fan-out and fairness runs do. With `quiet_s`, nothing is
    published for `quiet_s` seconds between them: the first message after a quiet spell must not wait for a
    session to start.
    """
    room_id = make_room(ctx)
    make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url(), max_in_flight=64)
    first_ms = first_delivery_ms(ctx, room_id)
    time.sleep(quiet_s)
    ctx.receiver.reset()
    out = run_tool("bench.load", "open", f"{ctx.base_url}/api/v1/rooms/{room_id}/messages/", ctx.admin_key,
                   json.dumps(event(1)), str(rate), str(seconds))
    sends = json.loads(out)
    message_ids = {s[2] for s in sends if s[2]}
    wait_until(lambda: len({a[2] for a in ctx.receiver.arrivals() if a[2] in message_ids}) >= len(message_ids),
               timeout=60, poll=0.2)
    arrived = {a[2]: a[0] for a in ctx.receiver.arrivals() if a[3] == 1}
    end = time.monotonic()
    # A publish that failed or never arrived counts as arriving now: late, not missing.
    latencies = [(arrived.get(s[2], end) - s[0]) * 1000 for s in sends]
    on_time = sum(1 for s in sends if s[1] - s[0] <= 0.010) / len(sends)
    round_trips = [(s[4] - s[1]) * 1000 for s in sends]
    stages, tail = delivery_stages(room_id, sends, arrived)
    return Latency(percentile(latencies, 50), percentile(latencies, 99), on_time, len(sends),
                   percentile(round_trips, 99), stages_ms=stages, tail_stages_ms=tail, first_ms=first_ms)


def first_delivery_ms(ctx: Context, room_id: int) -> float:
    """Publish one message to a room and wait for it at the receiver; return ms from its request to its arrival."""
    with api(ctx) as client:
        started = time.monotonic()
        reply = client.post(f"/api/v1/rooms/{room_id}/messages/", json=event(0))
        reply.raise_for_status()
    message_id = reply.json()["message_id"]

    def arrival() -> float | None:
        return next((a[0] for a in ctx.receiver.arrivals() if a[2] == message_id), None)

    wait_until(lambda: arrival() is not None, timeout=60, poll=0.01)
    return (arrival() - started) * 1000  # type: ignore[operator]  # waited for above


def fairness(ctx: Context, subscriptions: int, slow_share: float, rate: float,
             seconds: float) -> tuple[float, float, int, int]:
    """Many push subscriptions sharing the traffic, some with receivers that answer after 2 s.

    Rooms of 10 subscriptions each, one in ten of them slow; after one event per room (so every
    subscription is active, its session warm), events go to the rooms in turn at `rate`.
    Returns the fast subscriptions' end-to-end p50 and p99 ms, their deliveries within 60 s of the
    last publish and the deliveries expected (a delivery later than that is missing from the percentiles).
    """
    per_room = 10
    rooms = []
    slow_every = round(1 / slow_share)
    for r in range(subscriptions // per_room):
        room_id = make_room(ctx)
        for s in range(per_room):
            slow = (r * per_room + s) % slow_every == 0
            make_subscription(ctx, room_id, type="push", max_in_flight=16,
                              push_url=ctx.receiver.url("/slow/2000" if slow else "/hook"))
        rooms.append(room_id)
    # Active subscriptions: each has had traffic (its session is warm) before the measured run. Each wait
    # counts only its own messages' arrivals: the receiver still holds earlier figures' (and, after the
    # reset, late warm-up ones), and counting those ended a wait early and left the latest out.
    warm = set()
    with api(ctx) as client:
        for room_id in rooms:
            reply = client.post(f"/api/v1/rooms/{room_id}/messages/", json=event(0))
            reply.raise_for_status()
            warm.add(reply.json()["message_id"])
    fast_per_message = per_room - per_room // slow_every

    def arrived(ids: Container[str]) -> list[Arrival]:
        return [a for a in ctx.receiver.arrivals() if a[1] == "/hook" and a[2] in ids]

    wait_until(lambda: len(arrived(warm)) >= fast_per_message * len(warm), timeout=60, poll=0.5)
    ctx.receiver.reset()
    paths = ",".join(f"{ctx.base_url}/api/v1/rooms/{room_id}/messages/" for room_id in rooms)
    out = run_tool("bench.load", "open", paths, ctx.admin_key, json.dumps(event(2)), str(rate), str(seconds))
    sends = json.loads(out)
    sent_at = {s[2]: s[0] for s in sends if s[2]}
    expected = len(sent_at) * fast_per_message
    wait_until(lambda: len(arrived(sent_at)) >= expected, timeout=60, poll=0.5)
    fast = [(a[0] - sent_at[a[2]]) * 1000 for a in arrived(sent_at)]
    return percentile(fast, 50), percentile(fast, 99), len(fast), expected


def fanout(ctx: Context, subscriptions: int, slow_share: float, publishes: int,
           gap_s: float) -> tuple[float, float, dict[str, float], dict[str, float]]:
    """One room with `subscriptions` push subscriptions, a `slow_share` of them answering after 2 s; `publishes`
    single publishes `gap_s` apart. Returns the fast ones' end-to-end p99 ms, the relay's median ms from a
    delivery's creation to the broker's receipt (its published_messages row), the fast ones' p99 of each step
    and the CPU ms each process used per publish, from the first publish until every fast delivery arrived
    (the slow ones' answers come later, so their recording is not in it)."""
    from django.db.models import F

    from delivery.models import SendRecord

    room_id = make_room(ctx)
    slow_every = round(1 / slow_share)
    for s in range(subscriptions):
        make_subscription(ctx, room_id, type="push", max_in_flight=16,
                          push_url=ctx.receiver.url("/slow/2000" if s % slow_every == 0 else "/hook"))
    fast_count = subscriptions - len(range(0, subscriptions, slow_every))
    with api(ctx) as client:  # every session warm before the measured publishes (this room's: the receiver
        # still holds the arrivals of the runs before)
        warm = client.post(f"/api/v1/rooms/{room_id}/messages/", json=event(0))
        warm.raise_for_status()
        warm_id = warm.json()["message_id"]
        wait_until(lambda: sum(1 for a in ctx.receiver.arrivals() if a[1] == "/hook" and a[2] == warm_id)
                   >= fast_count, 60, 0.2)
        ctx.receiver.reset()
        sent_at = {}
        meter = CpuMeter(ctx.processes, ctx.database)
        meter.start()
        for i in range(publishes):
            time.sleep(gap_s)
            started = time.monotonic()
            reply = client.post(f"/api/v1/rooms/{room_id}/messages/", json=event(i + 1))
            reply.raise_for_status()
            sent_at[reply.json()["message_id"]] = started
    expected = fast_count * publishes
    wait_until(lambda: sum(1 for a in ctx.receiver.arrivals() if a[1] == "/hook" and a[2] in sent_at) >= expected,
               timeout=60, poll=0.05)
    cpu = {name: seconds * 1000 / publishes for name, seconds in meter.stop().items()}
    fast = [(a[0] - sent_at[a[2]]) * 1000 for a in ctx.receiver.arrivals() if a[1] == "/hook" and a[2] in sent_at]
    relay = [(sent - created).total_seconds() * 1000 for sent, created in SendRecord.objects.filter(
        delivery__message__room_id=room_id, delivery__message__created_at__isnull=False).annotate(
        created=F("delivery__created_at")).values_list("sent_at", "created")]
    return percentile(fast, 99), statistics.median(relay), fast_steps(room_id, set(sent_at)), cpu


def fast_steps(room_id: int, message_ids: set[str]) -> dict[str, float]:
    """The p99 of each step of the first attempts to the room's fast (`/hook`) subscriptions, from the rows' clocks.

    row → receipt: the delivery row's creation to the broker's receipt for its frame (the relay); receipt →
    claim: the broker to the worker's session and its claim of the attempt; POST: the attempt's own duration.
    """
    from delivery.models import DeliveryAttempt, SendRecord

    receipts = dict(SendRecord.objects.filter(delivery__message__room_id=room_id, attempt=1)
                    .values_list("delivery_id", "sent_at"))
    rows = DeliveryAttempt.objects.filter(
        delivery__message__room_id=room_id, attempt=1, delivery__subscription__push_url__endswith="/hook").values_list(
        "delivery_id", "delivery__message_id", "delivery__created_at", "started_at", "duration_ms")
    steps: dict[str, list[float]] = {"row → receipt": [], "receipt → claim": [], "POST": []}
    for delivery_id, message_id, created_at, started_at, duration_ms in rows:
        if str(message_id) not in message_ids or delivery_id not in receipts:
            continue
        steps["row → receipt"].append((receipts[delivery_id] - created_at).total_seconds() * 1000)
        steps["receipt → claim"].append((started_at - receipts[delivery_id]).total_seconds() * 1000)
        steps["POST"].append(float(duration_ms))
    return {name: percentile(values, 99) for name, values in steps.items() if values}


def redelivery_timing_error(ctx: Context, n: int, rate: int, delay_ms: int = 1000) -> tuple[float, float]:
    """Fail every first attempt; return p50 and p99 of (gap between the attempts − EBR delay) in ms."""
    room_id = make_room(ctx, delivery_delay_ms=delay_ms, delivery_delay_multiplier=1.0, delivery_attempts=1)
    # Every first attempt fails on purpose: the circuit breaker would rightly stop calling such an endpoint
    # (docs/delivery-semantics.md#circuit-breaker), so its rules are off here, where the retry timing is measured.
    make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url("/fail-first"), max_in_flight=64,
                      breaker_failure_threshold=0, breaker_failure_ratio=0)
    ctx.receiver.reset()
    size = max(1, rate // 10)
    started = time.monotonic()
    with api(ctx) as client:
        for i, start in enumerate(range(0, n, size)):  # a batch every 0.1 s, as retries spread in production
            time.sleep(max(0.0, started + i * 0.1 - time.monotonic()))
            batch = {"messages": [event(j) for j in range(start, min(n, start + size))]}
            client.post(f"/api/v1/rooms/{room_id}/messages/batch/", json=batch).raise_for_status()
    wait_until(lambda: sum(1 for a in ctx.receiver.arrivals() if a[3] == 2) >= n, timeout=120, poll=0.2)
    arrivals = ctx.receiver.arrivals()
    first = {a[2]: a[0] for a in arrivals if a[3] == 1}
    errors = [(a[0] - first[a[2]]) * 1000 - delay_ms for a in arrivals if a[3] == 2 and a[2] in first]
    if not errors:
        raise RuntimeError(f"redelivery timing: none of the {n} messages got its second attempt within 120 s")
    return percentile(errors, 50), percentile(errors, 99)


# ---- reports -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReportTimes:
    spark_s: float  # `manage.py run_reports --full`, wall time, JVM start included
    spark_peak_mib: float  # the driver process and its JVM together
    postgres_s: float  # docs/analytics-postgres.sql through psql


def report_database(env: dict[str, str], name: str, messages: int) -> tuple[dict[str, str], int]:
    """Fill the scratch database `name` with `messages` of generated history; return its environment, attempt rows."""
    return generated_database(env, name, ["--messages", str(messages), "--days", "7", "--end", "2026-11-20T00:00:00Z"])


def generated_database(env: dict[str, str], name: str, traffic: list[str]) -> tuple[dict[str, str], int]:
    """Recreate the scratch database `name` and fill it by `generate_traffic` with these arguments; return its
    environment and its attempt rows."""
    import psycopg

    from bench.stack import recreate_database

    env = recreate_database(env, name)
    subprocess.run([sys.executable, "manage.py", "generate_traffic", *traffic], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        attempts = conn.execute("SELECT count(*) FROM delivery_attempts").fetchone()[0]
    return env, attempts


def report_run(env: dict[str, str], log_dir: Path, *, full: bool = True, postgres: bool = True,
               spark: bool = True) -> ReportTimes:
    """With `spark`, one Spark run of the report jobs (full, or the hours changed since the last), then, with
    `postgres`, the same aggregates in PostgreSQL alone (each 0 when not run)."""
    if not spark:
        return ReportTimes(0.0, 0.0, postgres_alone_s(env))
    started = time.monotonic()
    spark = Process("run_reports", [sys.executable, "manage.py", "run_reports", *(["--full"] if full else [])], env,
                    log_dir)
    if spark.popen.wait() != 0:
        raise RuntimeError(f"run_reports failed:\n{spark.log_path.read_text()[-3000:]}")
    spark_s = time.monotonic() - started
    spark.stop()
    return ReportTimes(spark_s, spark.peak_rss_kib / 1024, postgres_alone_s(env) if postgres else 0.0)


def postgres_alone_s(env: dict[str, str]) -> float:
    """The report's aggregates in PostgreSQL alone (docs/analytics-postgres.sql through psql), wall s."""
    started = time.monotonic()
    subprocess.run(["psql", env["DATABASE_URL"], "-q", "-v", "ON_ERROR_STOP=1", "-f", "docs/analytics-postgres.sql"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def worker_rss_mib(ctx: Context) -> float:
    """The worker processes' resident memory now, added up, MiB."""
    return sum(rss_kib(worker.popen.pid) for worker in ctx.workers()) / 1024


@dataclass
class Takeover:
    cold_start_s: float  # the primary's `artemis run` until its STOMP acceptor answers
    live_s: float  # SIGKILL of the primary until the backup logs that it is live
    first_delivery_s: float  # SIGKILL until the first message delivered through the backup
    confirmed: int  # sends confirmed (RECEIPT) over the run
    lost: int  # confirmed sends never delivered


def broker_failover(work: Path) -> Takeover:
    """Start a shared-store Artemis pair, stream confirmed sends, SIGKILL the primary, time the takeover."""
    from delivery.broker import BrokerError, OutgoingMessage, SendFailed, connect
    from tests.artemis_pair import BACKUP_WAITING, BECAME_LIVE, create_pair, logged_at, wait_for_log, wait_for_stomp

    pair = create_pair(work)
    try:
        started = time.monotonic()
        pair.start(pair.primary)
        wait_for_stomp(pair, pair.primary)
        cold_start = time.monotonic() - started
        pair.start(pair.backup)
        wait_for_log(pair, pair.backup, BACKUP_WAITING)
        destination = f"bench-failover::q-{uuid.uuid4().hex[:8]}"
        confirmed: set[str] = set()
        arrivals: dict[str, float] = {}
        stop, received_all = threading.Event(), threading.Event()

        def send() -> None:
            with connect(pair.url, connect_timeout=5, receipt_timeout=5) as broker:
                for n in itertools.count():
                    if stop.is_set():
                        return
                    try:
                        broker.send(OutgoingMessage(destination, f"m{n}".encode(), {"persistent": "true"}))
                        confirmed.add(f"m{n}")
                    except SendFailed:
                        time.sleep(0.05)
                    time.sleep(0.005)

        def receive() -> None:
            with connect(pair.url, connect_timeout=5) as broker, broker.consumer(destination, prefetch=10) as consumer:
                while not received_all.is_set():
                    if (message := consumer.receive(timeout=0.2)) is not None:
                        arrivals.setdefault(message.body.decode(), time.time())
                        with contextlib.suppress(BrokerError):  # a lost connection: the broker delivers it again
                            consumer.ack(message)

        threads = [threading.Thread(target=send), threading.Thread(target=receive)]
        for thread in threads:
            thread.start()
        try:
            if not wait_until(lambda: len(confirmed) >= 200, 60):
                raise RuntimeError(f"the primary confirmed {len(confirmed)} sends in 60 s\n{pair.logs()}")
            killed = time.time()
            pair.kill(pair.primary)
            wait_for_log(pair, pair.backup, BECAME_LIVE)
            live = logged_at(pair.backup, BECAME_LIVE)
            if not wait_until(lambda: any(t > live for t in list(arrivals.values())), 60):
                raise RuntimeError(f"nothing was delivered through the backup in 60 s\n{pair.logs()}")
            wait_until(lambda: len(confirmed) >= 400, 60)
        finally:
            stop.set()
            threads[0].join(timeout=30)  # the sender: `confirmed` is final
            wait_until(lambda: set(confirmed) <= set(arrivals), 30)
            received_all.set()
            threads[1].join(timeout=30)
        first = min(t for t in arrivals.values() if t > live)
        return Takeover(cold_start, live - killed, first - killed, len(confirmed), len(set(confirmed) - set(arrivals)))
    finally:
        pair.stop()


# ---- the archive ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArchiveTimes:
    seconds: float  # `manage.py archive`, wall time, JVM start included
    messages: int  # messages archived and removed
    rows: int  # PostgreSQL rows removed (every table)
    longest_transaction_s: float  # the longest batch's delete transaction (its rows' lock time)
    size_before_mib: float  # the log tables with their indexes, before
    size_after_mib: float  # the same after the run and a VACUUM FULL
    idle_p99_ms: float  # a publish's database transaction every 20 ms, before the run
    during_p99_ms: float  # the same during the run


LOG_TABLES = ("delivery_message", "delivery_delivery", "delivery_attempts", "published_messages")
PUBLISH_SQL = """
WITH m AS (
    INSERT INTO delivery_message (id, room_id, event_type, event_version, payload, correlation_id, ordering_key,
                                  created_at, traceparent)
    VALUES (%(id)s, %(room)s, 'probe', '1', '{}', %(id)s, '', now(), '') RETURNING id)
INSERT INTO delivery_delivery (message_id, subscription_id, destination, status, ordering_key, parks_key, attempts,
                               redelivery_count, lease_token, replays, last_error, created_at, updated_at)
SELECT m.id, %(subscription)s, 'probe', 'queued', '', false, 0, 0, '', 0, '', now(), now() FROM m
"""


def archive_database(env: dict[str, str], name: str, messages: int, days: int) -> tuple[dict[str, str], int]:
    """Fill the scratch database `name` with `messages` of generated history over the `days` to now; return its
    environment and its attempt rows."""
    return generated_database(env, name, ["--messages", str(messages), "--days", str(days)])


def log_tables_mib(conn: Any) -> float:
    sizes = [conn.execute("SELECT pg_total_relation_size(%s)", [table]).fetchone()[0] for table in LOG_TABLES]
    return sum(sizes) / 2**20


def publish_p99_ms(database_url: str, until: Callable[[], bool]) -> float:
    """Time a publish's database transaction (a message and its delivery) every 20 ms until `until()`."""
    import psycopg

    latencies = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        room, subscription = conn.execute("SELECT room_id, id FROM subscriptions_subscription LIMIT 1").fetchone()
        while not until():
            started = time.monotonic()
            with conn.transaction():
                conn.execute(PUBLISH_SQL, {"id": uuid.uuid4(), "room": room, "subscription": subscription})
            latencies.append((time.monotonic() - started) * 1000)
            time.sleep(0.02)
    return percentile(latencies, 99)


def archive_run(env: dict[str, str], log_dir: Path, idle_s: float) -> ArchiveTimes:
    """One `manage.py archive` over the database (default retention, 7 days), a publish probe beside it and
    `idle_s` before it."""
    import psycopg

    env = {**env, "DOVECOTE_ARCHIVE_URL": str(log_dir / "archive")}
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        before = log_tables_mib(conn)
    idle_end = time.monotonic() + idle_s
    idle = publish_p99_ms(env["DATABASE_URL"], lambda: time.monotonic() > idle_end)
    started = time.monotonic()
    archive = Process("archive", [sys.executable, "manage.py", "archive"], env, log_dir)
    during = publish_p99_ms(env["DATABASE_URL"], lambda: archive.popen.poll() is not None)
    seconds = time.monotonic() - started
    archive.stop()
    text = archive.log_path.read_text()
    if archive.popen.returncode != 0:
        raise RuntimeError(f"manage.py archive failed:\n{text[-3000:]}")
    transactions = [float(s) for s in re.findall(r"in a ([0-9.]+) s transaction", text)] or [0.0]
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        messages, rows = conn.execute("SELECT messages, rows FROM archive_runs ORDER BY id DESC LIMIT 1").fetchone()
        conn.execute(f"VACUUM FULL {', '.join(LOG_TABLES)}")
        after = log_tables_mib(conn)
    return ArchiveTimes(seconds, messages, rows, max(transactions), before, after, idle, during)


# ---- fresh reports -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Follow:
    latencies_s: list[float]  # each write's commit → the end of the first refresh started after it
    refreshes_s: list[float]  # those refreshes' own wall time (the first starts the follower's JVM)
    full_s: float  # then `manage.py run_reports --full`, which hands the run to the follower: wall s


def follow_latency(env: dict[str, str], log_dir: Path, *, every_s: float, trials: int) -> Follow:
    """Event → report with `run_reports --follow --every every_s`: seconds from new history's commit until a
    refresh that started after it has published (its hours recomputed), once per trial."""
    import psycopg

    follower = Process("run_reports_follow", [sys.executable, "manage.py", "run_reports", "--follow",
                                              "--every", f"{every_s:g}"], env, log_dir)
    latencies, refreshes = [], []
    try:
        with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
            def last_published_run() -> tuple[int, Any, Any] | None:
                return conn.execute("SELECT id, started_at, finished_at FROM report_runs WHERE status = 'succeeded' "
                                    "ORDER BY id DESC LIMIT 1").fetchone()

            def refreshed_after(moment: Any) -> bool:
                run = last_published_run()
                return run is not None and run[1] > moment

            def hour_published(since: Any) -> int:
                return conn.execute("SELECT coalesce(sum(published), 0) FROM report_hourly WHERE hour >= %s",
                                    [since]).fetchone()[0]

            first = last_published_run()
            if not wait_until(lambda: follower.popen.poll() is None and last_published_run() != first, 300, 0.5):
                raise RuntimeError(f"run_reports --follow published no refresh in 300 s:\n"
                                   f"{follower.log_path.read_text()[-3000:]}")
            for trial in range(trials):
                # The same hours before and after: across the hour's end, "the last hour" would move on.
                since = conn.execute("SELECT date_trunc('hour', now()) - interval '1 hour'").fetchone()[0]
                before = hour_published(since)
                subprocess.run([sys.executable, "manage.py", "generate_traffic", "--messages", "200", "--days",
                                "0.0001", "--seed", str(100 + trial)], cwd=ROOT, env=env, check=True,
                               stdout=subprocess.DEVNULL)
                written = conn.execute("SELECT now()").fetchone()[0]  # the history's transaction has committed
                if not wait_until(functools.partial(refreshed_after, written), 6 * every_s + 120, 0.5):
                    raise RuntimeError(f"no refresh started after the new history and published:\n"
                                       f"{follower.log_path.read_text()[-3000:]}")
                run = last_published_run()
                assert run is not None
                if hour_published(since) <= before:
                    raise RuntimeError(f"the refresh after the new history left the last hours' published count at "
                                       f"{before}:\n{follower.log_path.read_text()[-3000:]}")
                latencies.append((run[2] - written).total_seconds())
                refreshes.append((run[2] - run[1]).total_seconds())
        started = time.monotonic()
        full = subprocess.run([sys.executable, "manage.py", "run_reports", "--full"], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
        full_s = time.monotonic() - started
        if full.returncode != 0 or "run by run_reports --follow" not in full.stdout:
            raise RuntimeError(f"run_reports --full was not run by the follower ({full.returncode}):\n"
                               f"{full.stdout}{full.stderr[-3000:]}\n{follower.log_path.read_text()[-3000:]}")
    finally:
        follower.stop()
    return Follow(latencies, refreshes, full_s)
