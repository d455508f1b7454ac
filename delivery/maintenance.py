"""Housekeeping for databases that are recreated while the broker keeps its queues."""

from __future__ import annotations

import time

from django.db import connection

# Destinations are named after room and subscription ids, and frames carry delivery ids.
ID_TABLES = ("rooms_room", "subscriptions_subscription", "delivery_delivery")


def start_ids_after_earlier_databases() -> None:
    """Start ids at the current time in ms, so no queue or frame left by an earlier database names them."""
    if connection.vendor != "postgresql":
        return
    start = int(time.time() * 1000)
    with connection.cursor() as cursor:
        for table in ID_TABLES:
            cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [table, start])
