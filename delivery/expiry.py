"""Expire deliveries whose message outlived its room's expiration before being delivered.

Two ways lead here. The broker expires a frame that waits past its `expires` time and moves
it to EXPIRY_DESTINATION (Artemis's expiry address); `drain_expired` reads those frames and
records each delivery `expired`. And `expire_overdue` sweeps the database for unsettled (or
held: an ordering key's later events) deliveries whose message has expired, whatever became of
their frames (a frame held by a consumer, a pull lease, a delivery still pending). Beat runs both every few seconds.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from delivery import metrics, sequencing
from delivery.broker import EXPIRY_DESTINATION, BrokerError
from delivery.broker.shared import shared_broker
from delivery.frames import MESSAGE_ID, FrameInfo
from delivery.models import Delivery

log = logging.getLogger("delivery.expiry")

# An attempt under way at expiry may finish; one "under way" this long ago died with its worker.
ABANDONED_ATTEMPT = timedelta(minutes=10)
DRAIN_BATCH = 500
DRAIN_IDLE_S = 0.2


def expire_overdue() -> int:
    """Record the frames the broker expired, then mark every unsettled delivery of an expired message `expired`."""
    try:
        drain_expired()
    except BrokerError:
        log.warning("expiry: cannot read %s now; the database sweep goes on", EXPIRY_DESTINATION, exc_info=True)
    now = timezone.now()
    overdue = Delivery.objects.filter(
        Q(attempt_started_at__isnull=True) | Q(attempt_started_at__lt=now - ABANDONED_ATTEMPT),
        message__expires_at__lte=now,
    )
    with transaction.atomic():  # with the release of the next event of each ordering key
        keys = set(overdue.filter(status__in=[*Delivery.UNSETTLED, Delivery.Status.HELD])
                   .exclude(ordering_key="").values_list("subscription_id", "ordering_key"))
        expired = overdue.mark_expired("expired before delivery", now, including_held=True)
        sequencing.release({(s, k) for s, k in keys if s is not None})
    metrics.EXPIRED.labels("sweep").inc(expired)
    return expired


def drain_expired(limit: int = DRAIN_BATCH) -> int:
    """Take the frames the broker expired off its expiry queue, recording their deliveries `expired`; count them."""
    taken = 0
    with shared_broker().consumer(EXPIRY_DESTINATION, prefetch=limit) as consumer:
        while taken < limit and (frame := consumer.receive(timeout=DRAIN_IDLE_S)) is not None:
            try:
                info = FrameInfo.of(frame)
                message_id = uuid.UUID(frame.headers.get(MESSAGE_ID, ""))
            except ValueError:
                log.warning("expiry: dropping an expired frame without Dovecote headers (%s)", frame.broker_message_id)
            else:
                # The message id guards against a frame of another database that shares the broker.
                with transaction.atomic():
                    rows = Delivery.objects.filter(pk=info.delivery_id, message_id=message_id)
                    expired = rows.mark_expired("expired on the broker before delivery", timezone.now())
                    if expired:
                        sequencing.settled(rows)
                if expired:
                    metrics.EXPIRED.labels("broker").inc(expired)
                    log.info("expired on the broker", extra={"correlation_id": info.correlation_id,
                                                             "delivery_id": info.delivery_id,
                                                             "attempt": info.attempt})
            consumer.ack(frame)
            taken += 1
    return taken
