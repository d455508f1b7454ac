"""Which worker runs a subscription's push session: a claim on the subscription row.

`start_sessions` claims a subscription that has no session (`session_token`, `session_until`)
and asks a Celery worker to run one (the task `delivery.tasks.deliver_push`). The worker's push
engine adopts the claim under its own token, renews the claims of all its sessions in one UPDATE
every second, and releases each when the session ends. A claim not renewed lapses CLAIM_TTL
later (its worker died), and beat's `dispatch_push_sessions` starts a session elsewhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta

from celery import current_app
from django.db.models import Q
from django.utils import timezone

from delivery.models import Delivery
from subscriptions.models import SECRET_FIELDS, Subscription

START_GRACE = timedelta(seconds=15)  # how long an enqueued session may wait for a worker
CLAIM_TTL = timedelta(seconds=5)  # renewed every second by a running engine; lapses after its worker dies
LOOKAHEAD = timedelta(seconds=5)  # keep (or start) a session for retries due this soon
DELIVER_PUSH = "delivery.tasks.deliver_push"


def start_sessions(subscription_ids: Iterable[int]) -> list[int]:
    """Claim each active push subscription that has no session and enqueue one; return those started."""
    started = []
    for subscription_id in set(subscription_ids):
        token = uuid.uuid4().hex
        now = timezone.now()
        claimed = (
            Subscription.objects.filter(pk=subscription_id, type=Subscription.Type.PUSH,
                                        status=Subscription.Status.ACTIVE)
            .filter(Q(session_until__isnull=True) | Q(session_until__lt=now))
            .update(session_token=token, session_until=now + START_GRACE)
        )
        if claimed:
            enqueue_session(subscription_id, token)
            started.append(subscription_id)
    return started


def enqueue_session(subscription_id: int, token: str) -> None:
    """Ask a worker to run the session (by task name: the tasks module imports this one)."""
    current_app.send_task(DELIVER_PUSH, args=(subscription_id, token))


def start_sessions_for_deliveries(deliveries: Iterable[Delivery]) -> list[int]:
    """Start sessions for the push subscriptions of these deliveries (loaded with their subscription)."""
    push = Subscription.Type.PUSH
    return start_sessions({delivery.subscription.pk for delivery in deliveries
                           if delivery.subscription is not None and delivery.subscription.type == push})


def subscriptions_with_due_work(now: datetime | None = None) -> list[int]:
    """Return active push subscriptions with queued deliveries or retries due within the lookahead."""
    return list(
        Delivery.objects.filter(_due_work(now or timezone.now()), subscription__type=Subscription.Type.PUSH,
                                subscription__status=Subscription.Status.ACTIVE)
        .values_list("subscription_id", flat=True).distinct()
    )


def _due_work(now: datetime) -> Q:
    return Q(status=Delivery.Status.QUEUED) | Q(status=Delivery.Status.RETRYING, next_attempt_at__lte=now + LOOKAHEAD)


def adopt(subscription_id: int, token: str, engine_token: str) -> Subscription | None:
    """Take over the claim `token` for the engine; return the subscription (with its room), or None if lost."""
    taken = Subscription.objects.filter(pk=subscription_id, session_token=token).update(
        session_token=engine_token, session_until=timezone.now() + CLAIM_TTL)
    if not taken:
        return None
    return Subscription.objects.select_related("room").filter(pk=subscription_id).first()


def renew(engine_token: str) -> dict[int, Subscription]:
    """Extend every claim the engine holds; return its subscriptions as they are now (with their rooms)."""
    Subscription.objects.filter(session_token=engine_token).update(session_until=timezone.now() + CLAIM_TTL)
    return {s.pk: s for s in Subscription.objects.select_related("room").filter(session_token=engine_token)}


def release(subscription_id: int, engine_token: str, *, hand_over: bool = False) -> None:
    """Give up the engine's claim on a subscription; when handing over, start a new session if work is due."""
    released = Subscription.objects.filter(pk=subscription_id, session_token=engine_token).update(
        session_token="", session_until=None)
    if released and hand_over and Delivery.objects.filter(_due_work(timezone.now()),
                                                          subscription_id=subscription_id).exists():
        start_sessions([subscription_id])


def retries_due_soon(subscription_ids: list[int]) -> set[int]:
    """Return those of the subscriptions with a retry due within the lookahead."""
    return set(Delivery.objects.filter(subscription_id__in=subscription_ids, status=Delivery.Status.RETRYING,
                                       next_attempt_at__lte=timezone.now() + LOOKAHEAD)
               .values_list("subscription_id", flat=True).distinct())


def reread_secrets(subscription_id: int) -> Subscription | None:
    """Return the subscription with only its signing secrets and their version read (None: deleted)."""
    return Subscription.objects.only(*SECRET_FIELDS).filter(pk=subscription_id).first()
