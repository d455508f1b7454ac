"""Housekeeping for databases that are recreated while the broker keeps its queues."""

from __future__ import annotations

import os
import re
import sys
import time
import zlib
from collections.abc import Callable
from urllib.parse import urlparse

from django.db import connection

# Destinations are named after room and subscription ids, and frames carry delivery ids.
ID_TABLES = ("rooms_room", "subscriptions_subscription", "delivery_delivery")


def start_ids_after_earlier_databases() -> int | None:
    """Start ids at the current time in ms, so no queue or frame left by an earlier database names them.

    Runs that share the broker at the same time (TEST_RUN_NAME set, see tests/settings.py) each
    start a trillion ids further, so their queue names never meet.
    """
    if connection.vendor != "postgresql":
        return None
    run_name = os.environ.get("TEST_RUN_NAME", "")
    start = int(time.time() * 1000) + (zlib.crc32(run_name.encode()) % 1000 + 1) * 10**12 * bool(run_name)
    with connection.cursor() as cursor:
        for table in ID_TABLES:
            cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [table, start])
    return start


RUN_IDS = 10**11  # far more ids than a run makes, far fewer than lie between two runs' starts
DESTINATION = re.compile(r"room-(\d+)::subscription-\d+")


def destroy_the_runs_queues(start: int, broker_url: str) -> None:
    """Remove the queues this run's rooms left in the shared broker, with their frames, once the run is over.

    The test database is dropped at the end; the broker is not. Each run left ~50 queues holding
    ~12,000 frames (slow receivers' backlogs, paused subscriptions), which over many runs fill the
    broker's heap as the bench's leftovers once did. Only queues of rooms whose ids this run made
    (from `start`, see start_ids_after_earlier_databases) are touched: another run's, or a
    developer's `make run`, never.
    """
    def this_runs(destination: str) -> bool:
        match = DESTINATION.fullmatch(destination)
        return match is not None and start <= int(match[1]) < start + RUN_IDS

    destroy_queues(this_runs, broker_url)


def destroy_queues(wanted: Callable[[str], bool], broker_url: str) -> None:
    """Remove every queue of the broker at `broker_url` whose destination is `wanted` and that nobody consumes."""
    from delivery.broker.artemis import Management
    from delivery.broker.base import BrokerError

    url = urlparse(broker_url)
    management = Management(url.hostname or "127.0.0.1", url.port or 61613, url.username, url.password)
    left: list[str] = []
    try:
        for queue in management.queues("subscription-"):  # the queue's name; the room is its address
            if not wanted(queue.destination):
                continue
            try:
                if queue.consumers == 0:
                    management.destroy_queue(queue.destination)
                else:
                    left.append(f"{queue.destination} ({queue.consumers} consumers)")
            except BrokerError as error:
                left.append(f"{queue.destination} ({error})")
    except (BrokerError, OSError) as error:  # no broker: nothing of this run's is in one
        left.append(f"the listing ({error})")
    finally:
        management.close()
    if left:
        print(f"\ntests: left in the broker: {', '.join(left[:10])}", file=sys.stderr)
