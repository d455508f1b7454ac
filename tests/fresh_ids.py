"""Housekeeping for databases that are recreated while the broker keeps its queues."""

from __future__ import annotations

import os
import time
import zlib

from django.db import connection

# Destinations are named after room and subscription ids, and frames carry delivery ids.
ID_TABLES = ("rooms_room", "subscriptions_subscription", "delivery_delivery")


def start_ids_after_earlier_databases() -> None:
    """Start ids at the current time in ms, so no queue or frame left by an earlier database names them.

    Runs that share the broker at the same time (TEST_RUN_NAME set, see tests/settings.py) each
    start a trillion ids further, so their queue names never meet.
    """
    if connection.vendor != "postgresql":
        return
    run_name = os.environ.get("TEST_RUN_NAME", "")
    start = int(time.time() * 1000) + (zlib.crc32(run_name.encode()) % 1000 + 1) * 10**12 * bool(run_name)
    with connection.cursor() as cursor:
        for table in ID_TABLES:
            cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [table, start])
