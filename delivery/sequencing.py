"""Ordering keys: one event per key at a time, in publish order, for ordered subscriptions.

The broker cannot keep this order for Dovecote: a retry is a new frame scheduled for later
(`AMQ_SCHEDULED_DELAY`), so with Artemis message groups alone a later event of the key would
overtake a failed one. Dovecote sequences instead, in PostgreSQL:

1. At publish, a delivery of an ordered subscription carries the event's ordering key. It is
   created `pending` (and sent) only when its key has nothing unsettled, held or parked for that
   subscription; otherwise it is created `held`, and no frame of it exists.
2. When a delivery of a key settles (delivered, acked, dead-lettered, expired), the same
   transaction releases the key's oldest held delivery: held → pending. The outbox sends it after
   commit (the relay at once, the sweeper if this process dies first). A dead letter of a
   subscription with `ordering: park` releases nothing: it parks its key until an operator replays
   it (it blocks the key again while it is retried) or releases the key.
3. Every decision about a key takes a transaction-scoped advisory lock on its stripe (one of
   `LOCK_STRIPES`, hashed from subscription and key), so a publish and a settlement of the same key
   never both think the key is free, and no transaction holds more than `LOCK_STRIPES` locks.

So at most one delivery per key is ever on the broker or with the subscriber, and the next one
exists only as a row until then: a worker killed mid-attempt leaves its delivery unsettled (the
broker redelivers the frame), which keeps the key blocked; a settlement that commits has released
the next in the same commit. `release_stalled` (beat) is the safety net for a key left with held
deliveries and nothing blocking (e.g. an operator's change made outside these paths): it can
release only the oldest held delivery of a free key, so it never reorders anything either.
The cost: per key, one event per round trip to the subscriber; a slow or failing key waits alone.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from delivery.models import Delivery, DeliveryState
from delivery.outbox import relay
from subscriptions.models import Subscription

log = logging.getLogger("delivery.sequencing")
Status = Delivery.Status
Key = tuple[int, str]  # (subscription id, ordering key)
# A key with a delivery in one of these, or a parked dead letter, is busy: its next delivery waits.
BLOCKING = (*Delivery.UNSETTLED, Status.HELD)


# Keys are locked through a fixed set of stripes, so a transaction holds at most this many advisory
# locks whatever its batch holds: one lock per (subscription, key) ran PostgreSQL's shared lock table
# out of memory (500 keys × many ordered subscriptions), failing every database's transactions.
LOCK_STRIPES = 64
LOCK_NAMESPACE = 0x0D0C  # the first half of each lock's two-int id: no other advisory lock of Dovecote's uses it


def lock_stripe(key: Key) -> int:
    """Return the stripe of (subscription id, ordering key): the same in every process."""
    subscription_id, ordering_key = key
    return zlib.crc32(f"{subscription_id}:{ordering_key}".encode()) % LOCK_STRIPES


def lock_keys(keys: Iterable[Key]) -> None:
    """Hold the keys until the transaction ends, by stripe, in one order everywhere (no deadlock between holders).

    Two keys on one stripe only make their deciders wait for each other now and then; a decision
    about a key is short (a read of its busy rows), so stripes cost little and bound the locks.
    """
    if connection.vendor != "postgresql":
        return  # SQLite (the embedded demo) has one writer at a time
    with connection.cursor() as cursor:
        for stripe in sorted({lock_stripe(key) for key in keys}):
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_NAMESPACE, stripe])


def busy_keys(keys: set[Key], *, counting_held: bool) -> set[Key]:
    """Return those of `keys` with a delivery unsettled or parked (or, `counting_held`, held)."""
    if not keys:
        return set()
    statuses = BLOCKING if counting_held else Delivery.UNSETTLED
    rows = Delivery.objects.filter(
        Q(status__in=statuses) | Q(parks_key=True),
        subscription_id__in={s for s, _ in keys}, ordering_key__in={k for _, k in keys},
    ).order_by().values_list("subscription_id", "ordering_key").distinct()
    return {row for row in rows if row in keys}


def hold_behind(deliveries: Sequence[Delivery]) -> None:
    """Mark new deliveries `held` where their key is busy (or taken by one before them in `deliveries`).

    Runs in the publish transaction, before the rows are written, in publish order.
    """
    ordered = [(d, (d.subscription_id, d.ordering_key)) for d in deliveries
               if d.ordering_key and d.subscription_id is not None and d.status == Status.PENDING]
    if not ordered:
        return
    keys: set[Key] = {key for _, key in ordered}
    lock_keys(keys)
    busy = busy_keys(keys, counting_held=True)
    for delivery, key in ordered:
        if key in busy:
            delivery.status = Status.HELD
        else:
            busy.add(key)


def settled(deliveries: Iterable[Delivery | DeliveryState]) -> list[int]:
    """In a settling transaction: release the next delivery of each ordered key among `deliveries`."""
    return release({(d.subscription_id, d.ordering_key) for d in deliveries
                    if d.ordering_key and d.subscription_id is not None})


def release(keys: set[Key]) -> list[int]:
    """Release the oldest held delivery of each of `keys` that is free; the relay sends them after commit.

    Must run inside the transaction that freed the keys (it locks them until commit). Returns the
    released delivery ids.
    """
    if not keys:
        return []
    lock_keys(keys)
    free = keys - busy_keys(keys, counting_held=False)  # held ones wait: they do not keep the next from going
    released = []
    now = timezone.now()
    for subscription_id, key in sorted(free):
        held = (Delivery.objects.filter(subscription_id=subscription_id, ordering_key=key, status=Status.HELD)
                .order_by("pk").values_list("pk", flat=True).first())
        if held is not None and Delivery.objects.filter(pk=held).release(now):
            released.append(held)
    if released:
        transaction.on_commit(lambda: send_released(released))
    return released


def send_released(delivery_ids: list[int]) -> None:
    """Hand released deliveries to the outbox relay (the sweeper sends them if this process stops first)."""
    rows = list(Delivery.objects.filter(pk__in=delivery_ids, status=Status.PENDING)
                .select_related("message__room", "subscription__room").order_by("pk"))
    relay().submit(rows)


def park_or_release(deliveries: Iterable[Delivery | DeliveryState]) -> None:
    """In a dead-lettering transaction: park the keys of subscriptions that park them, release the others."""
    ordered = [d for d in deliveries if d.ordering_key and d.subscription_id is not None]
    if not ordered:
        return
    parking = set(Subscription.objects.filter(pk__in={d.subscription_id for d in ordered},
                                              ordering=Subscription.Ordering.PARK).values_list("pk", flat=True))
    parked = [d.pk for d in ordered if d.subscription_id in parking]
    if parked:
        Delivery.objects.filter(pk__in=parked).park_keys()
    settled([d for d in ordered if d.subscription_id not in parking])


@dataclass(frozen=True)
class ParkedKey:
    ordering_key: str
    delivery: Delivery  # the dead letter that parks it
    waiting: int  # held deliveries behind it


def parked_keys(subscription: Subscription) -> list[ParkedKey]:
    """Return the subscription's parked keys, oldest first, with how many events wait behind each."""
    parking = list(Delivery.objects.filter(subscription=subscription, parks_key=True).select_related("message")
                   .order_by("pk"))
    if not parking:
        return []
    waiting = dict(Delivery.objects.filter(subscription=subscription, status=Status.HELD,
                                           ordering_key__in={d.ordering_key for d in parking})
                   .values("ordering_key").annotate(n=Count("pk")).values_list("ordering_key", "n"))
    return [ParkedKey(d.ordering_key, d, waiting.get(d.ordering_key, 0)) for d in parking]


class KeyNotParked(Exception):
    """The key is not parked; the text says so."""


def release_parked_key(subscription: Subscription, ordering_key: str) -> int | None:
    """Let a parked key move on without its dead letter (which stays, replayable); return the delivery released.

    Raises KeyNotParked when the key is not parked.
    """
    with transaction.atomic():
        lock_keys([(subscription.pk, ordering_key)])
        unparked = Delivery.objects.filter(subscription=subscription, ordering_key=ordering_key).unpark_keys(
            timezone.now())
        if not unparked:
            raise KeyNotParked(f"ordering key {ordering_key!r} of subscription {subscription.pk} is not parked")
        released = release({(subscription.pk, ordering_key)})
    log.info("ordering key %r of subscription %s released by an operator", ordering_key, subscription.pk)
    return released[0] if released else None


def release_stalled(limit: int = 500) -> int:
    """Release the next delivery of every key left with held deliveries and nothing blocking; count them."""
    keys = set(Delivery.objects.filter(status=Status.HELD).order_by().values_list("subscription_id", "ordering_key")
               .distinct()[:limit])
    if not keys:
        return 0
    with transaction.atomic():
        released = release(keys)
    if released:
        log.warning("released %d held deliveries whose keys had stalled", len(released))
    return len(released)
