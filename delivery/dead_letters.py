"""Dead letters: list, replay (a new life, attempts from 1, same message and correlation id), purge."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from delivery import metrics
from delivery.models import Delivery, DeliveryQuerySet
from delivery.outbox import relay
from subscriptions.models import Subscription

Status = Delivery.Status


def dead_letters(subscription: Subscription, *, since: datetime | None = None, until: datetime | None = None,
                 error: str = "") -> DeliveryQuerySet:
    """Return the subscription's dead letters not purged, filtered by time dead-lettered and error text."""
    rows = Delivery.objects.filter(subscription=subscription, status=Status.DEAD_LETTERED, purged_at__isnull=True)
    if since:
        rows = rows.filter(updated_at__gte=since)
    if until:
        rows = rows.filter(updated_at__lt=until)
    if error:
        rows = rows.filter(last_error__icontains=error)
    return rows


def replay(subscription: Subscription, message_ids: list[uuid.UUID] | None) -> list[int]:
    """Send dead letters again (all of them when `message_ids` is None); return the delivery ids.

    They are taken in id order, DOVECOTE_REPLAY_CHUNK at a time, each chunk in its own short
    transaction and handed to the relay when it commits: replaying a million dead letters holds no
    lock on all of them at once and no list of all of them in memory. A dead letter that dies again
    while the replay runs is not taken twice (the id only grows).
    """
    chosen = dead_letters(subscription)
    if message_ids is not None:
        chosen = chosen.filter(message_id__in=message_ids)
    ids: list[int] = []
    after = 0
    while chunk := replay_chunk(chosen.filter(pk__gt=after), settings.DOVECOTE_REPLAY_CHUNK):
        ids += chunk
        after = chunk[-1]
    metrics.REPLAYS.labels(metrics.room_label(subscription.room_id)).inc(len(ids))
    return ids


def replay_chunk(chosen: QuerySet[Delivery], size: int) -> list[int]:
    """Replay the first `size` of `chosen` (by id) in one transaction; return their ids."""
    now = timezone.now()
    with transaction.atomic():
        ids = list(chosen.order_by("pk").select_for_update().values_list("pk", flat=True)[:size])
        Delivery.objects.filter(pk__in=ids).replay(now)
        replayed = list(Delivery.objects.filter(pk__in=ids).select_related("message__room", "subscription__room"))
        transaction.on_commit(lambda: relay().submit(replayed))
    return ids


def purge(subscription: Subscription, message_ids: list[uuid.UUID] | None) -> int:
    """Remove dead letters from the list (their log rows stay for the reports); return how many."""
    chosen = dead_letters(subscription)
    if message_ids is not None:
        chosen = chosen.filter(message_id__in=message_ids)
    return chosen.mark_purged(timezone.now())
