"""The watchdog: send again the deliveries whose frame the broker lost.

A delivery that is `queued` or `retrying` always has a frame on its subscription's queue:
each change sends the new frame and waits for its receipt before writing the database, and
acks the old frame last (delivery/settle.py). A broker that loses frames breaks that promise:
the in-memory broker of `make demo` keeps nothing when its process stops, a queue deleted by
hand takes its frames along, a broker restored from an older journal forgets the newer ones.
Such a delivery would wait for ever. Beat runs `resend_lost` every 10 s:

1. Candidates: deliveries `queued` or `retrying` of active subscriptions, whose message has not
   expired, due more than GRACE ago (a retry at its `next_attempt_at`, a queued delivery at its
   last change) and with no attempt under way (or one whose worker must have died: started more
   than the subscription's `timeout_ms` + `frame_rules.CRASH_GRACE` + GRACE ago).
2. For each subscription with candidates, the broker's count of messages on its queue (ready,
   scheduled, and held unacked by a consumer) is compared with the subscription's `queued` and
   `retrying` deliveries that last changed before the count was read. Fewer messages than
   deliveries means that many frames are gone. A backlog, a pull subscription nobody pulls, or a
   push session holding frames keeps the count up, so none of them causes a re-send.
3. That many candidates, the most overdue first, are sent again at their current attempt
   (`outbox.next_frame`: the next attempt, or the one whose worker died), each recorded as a
   `published_messages` row of kind `resend` and logged with the reason. Their status stays; their
   last change (`updated_at`) becomes the resend, so they are due again from then: the next sweeps
   look first at the deliveries not yet sent again. (When it stayed, a queue that had lost more
   frames than one sweep sends got the same most-overdue deliveries sent again at every sweep, and
   the others never, until those duplicates had been consumed.)

Paused and disabled subscriptions are left alone: their frames wait on the queue until they are
resumed, and the watchdog looks at them again from then on. Leased deliveries have no frame (the
lease holds the message in the database) and pending ones are the outbox sweeper's.

GRACE is 15 s because a delivery that is only slow must never be a candidate: a due retry reaches
a push session within about a second (beat dispatches every second; the broker hands over a
scheduled frame milliseconds after it is due), an enqueued session may wait up to
`claims.START_GRACE` (15 s) for a free worker, and the broker moves frames of expired messages away
every second while their deliveries are recorded `expired` every 5 s. The count check alone
already prevents duplicates; the grace keeps the watchdog from asking the broker about queues
that are simply busy. So a lost frame is noticed at most GRACE + 10 s after its delivery was due.

A frame sent again while the original still exists does no harm: the push session that sees the
second one judges it against the first one's claim (`frame_rules.judge`: the same attempt under way is
looked at again later, and dropped as stale once its outcome is recorded).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db.models import Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from delivery import outbox
from delivery.broker import Broker, BrokerError
from delivery.broker.shared import shared_broker
from delivery.frame_rules import CRASH_GRACE
from delivery.models import Delivery, SendRecord
from subscriptions.models import Subscription

log = logging.getLogger("delivery.watchdog")
Status = Delivery.Status
WAITING = [Status.QUEUED, Status.RETRYING]

GRACE = timedelta(seconds=15)
# Deliveries changed this shortly before the broker's count was read may have frames it did not count yet.
COUNT_MARGIN = timedelta(seconds=1)
BATCH = 500


def resend_lost(now: datetime | None = None) -> int:
    """Find the deliveries whose frame the broker lost and send them again; return how many were sent."""
    now = now or timezone.now()
    by_subscription: dict[Subscription, list[Delivery]] = defaultdict(list)
    for delivery in overdue(now):
        if delivery.subscription is not None:  # always: overdue() takes deliveries of active subscriptions
            by_subscription[delivery.subscription].append(delivery)
    resent = 0
    for subscription, candidates in by_subscription.items():
        counted_at = timezone.now()
        try:
            held = frames_held(shared_broker(), subscription)
        except BrokerError as error:  # nothing can be sent either: the next sweep looks again
            log.warning("watchdog: cannot count the frames on %s now: %s", subscription.destination, error)
            return resent
        expected = frames_expected(subscription, counted_at)
        if held >= expected:
            continue
        chosen = candidates[:expected - held]
        log.warning("watchdog: queue %s holds %d messages for %d deliveries queued or retrying; sending %d "
                    "overdue ones again at their current attempt", subscription.destination, held, expected,
                    len(chosen))
        resent += resend(chosen, f"the broker had no frame for it {GRACE.seconds} s after it was due "
                                 f"(queue {subscription.destination} held {held} of {expected})")
    return resent


def overdue(now: datetime) -> list[Delivery]:
    """Return the deliveries due more than GRACE ago and not yet taken by a worker, most overdue first."""
    cutoff = now - GRACE
    rows = (
        Delivery.objects.select_related("message__room", "subscription__room")
        .filter(status__in=WAITING, updated_at__lt=cutoff, subscription__status=Subscription.Status.ACTIVE)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lt=cutoff))
        .filter(Q(message__expires_at__isnull=True) | Q(message__expires_at__gt=now))
        .order_by(due_since(), "pk")[:BATCH]
    )
    return [delivery for delivery in rows if not is_attempt_under_way(delivery, now)]


def due_since() -> Greatest:
    """When a waiting delivery became due: a retry at `next_attempt_at`, else its last change (a resend's too)."""
    return Greatest(Coalesce("next_attempt_at", "updated_at"), "updated_at")  # Greatest: SQLite has no NULL here


def is_attempt_under_way(delivery: Delivery, now: datetime) -> bool:
    """Say whether a worker may still be on the delivery's current attempt (its frame is held)."""
    started = delivery.attempt_started_at
    if started is None:
        return False
    timeout_ms = delivery.subscription.timeout_ms if delivery.subscription else 0
    limit = timedelta(milliseconds=timeout_ms) + CRASH_GRACE + GRACE
    return started > now - limit


def frames_held(broker: Broker, subscription: Subscription) -> int:
    """Return how many messages the broker holds on the subscription's queue (0 when it has no such queue)."""
    destination = subscription.destination
    return sum(queue.messages for queue in broker.queues(destination) if queue.destination == destination)


def frames_expected(subscription: Subscription, counted_at: datetime) -> int:
    """Count the subscription's deliveries that had a frame on the broker when it counted its messages."""
    return Delivery.objects.filter(
        Q(message__expires_at__isnull=True) | Q(message__expires_at__gt=counted_at),
        subscription=subscription, status__in=WAITING, updated_at__lt=counted_at - COUNT_MARGIN,
    ).count()


def resend(deliveries: Sequence[Delivery], why: str) -> int:
    """Send these deliveries again at their current attempt; return how many the broker confirmed.

    The deliveries come with their message, room and subscription loaded; their status does not change.
    Each one sent is due again from now (its `updated_at`), unless it changed since it was read: a
    worker's or a sweep's newer write is left as it is.
    """
    sent = []
    for start in range(0, len(deliveries), BATCH):
        sent += outbox.send_frames(deliveries[start:start + BATCH])
    if sent:
        read_before = max(delivery.updated_at for delivery, _ in sent)
        Delivery.objects.filter(pk__in=[delivery.pk for delivery, _ in sent], status__in=WAITING,
                                updated_at__lte=read_before).update(updated_at=timezone.now())
    SendRecord.objects.bulk_create(
        SendRecord(delivery=delivery, kind=SendRecord.Kind.RESEND, destination=frame.destination,
                         attempt=outbox.frame_attempt(delivery), delay_ms=frame.delay_ms,
                         correlation_id=delivery.message.correlation_id)
        for delivery, frame in sent
    )
    for delivery, _ in sent:
        context = {"correlation_id": delivery.message.correlation_id, "delivery_id": delivery.pk,
                   "destination": delivery.destination, "attempt": outbox.frame_attempt(delivery)}
        log.info("sent again: %s", why, extra=context)
    return len(sent)
