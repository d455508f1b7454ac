"""Measure what messages held on the broker cost it while nothing else happens: its CPU, idle, before and with them.

A paused subscription, or one whose receiver is down, holds its messages on its queue. This sends
`--messages` persistent 1 kB messages to a queue of its own that nobody consumes, and prints the
broker JVM's CPU (a share of one core, over 20 s) before and while they wait, then removes the queue.
Artemis's expiry scan walks every message it holds each `message-expiry-scan-period`
(deploy/artemis/broker.xml explains the setting with these figures):

    set -a; . var/services.env; set +a; .venv/bin/python scripts/measure_broker_backlog_cpu.py [--messages 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import stomp

ROOT = Path(__file__).resolve().parents[1]
BODY = "x" * 1000
RECEIPT_EVERY = 1000  # a receipt now and then keeps the sender from running far ahead of the journal


def broker_pid() -> int:
    """The pid of the services' Artemis JVM (scripts/services.sh starts it with -Dartemis.instance=…)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"-Dartemis.instance=" in cmdline.read_bytes():
                return int(cmdline.parent.name)
        except OSError:
            continue
    raise SystemExit("no Artemis JVM is running: run `make services` first")


def cpu_share(pid: int, seconds: float = 20.0) -> float:
    """The share of one core the process used over `seconds`."""
    def ticks() -> int:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    before = ticks()
    time.sleep(seconds)
    return (ticks() - before) / os.sysconf("SC_CLK_TCK") / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    count = parser.parse_args().messages
    url = urlparse(os.environ["STOMP_URL"].split(",")[0])
    pid = broker_pid()
    queue = f"measure-backlog::q-{uuid.uuid4().hex[:8]}"
    print(f"the broker's CPU, idle: {cpu_share(pid):.3f} of a core")
    conn = stomp.Connection([(url.hostname or "127.0.0.1", url.port or 61613)], heartbeats=(0, 0))
    conn.connect(url.username, url.password, wait=True)
    try:
        for n in range(count):
            receipt = {"receipt": f"r{n}"} if n % RECEIPT_EVERY == RECEIPT_EVERY - 1 else {}
            conn.send(queue, BODY, headers={"persistent": "true", **receipt})
        time.sleep(5)  # the last sends journalled
        print(f"the broker's CPU, idle, {count:,} messages waiting on one queue: {cpu_share(pid):.3f} of a core")
    finally:
        conn.disconnect()
        remove(url, queue)


def remove(url, queue: str) -> None:  # noqa: ANN001 - a urllib ParseResult
    """Destroy the queue with its messages (Dovecote's management client, so Django is set up first)."""
    import django

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dovecote.settings")
    django.setup()
    from delivery.broker.artemis import Management

    management = Management(url.hostname or "127.0.0.1", url.port or 61613, url.username, url.password)
    try:
        management.destroy_queue(queue)
    finally:
        management.close()


if __name__ == "__main__":
    main()
