"""Celery tasks: thin wrappers that take ids and call the delivery actions."""

from __future__ import annotations

from celery import shared_task

from delivery import expiry, long_open_breakers, outbox, pull, sequencing, subscription_teardown, watchdog
from delivery.broker import QueueInUse
from delivery.push import claims
from delivery.push.engine import engine


@shared_task(acks_late=False, ignore_result=True)
def deliver_push_sessions(starts: list[tuple[int, str]]) -> None:
    """Hand claimed subscriptions, each (id, start token), to this worker's push engine.

    Returns at once; a claim lapses if the worker dies, and beat's dispatch starts its session elsewhere.
    """
    push_engine = engine()
    for subscription_id, token in starts:
        push_engine.start_session(subscription_id, token)


@shared_task(acks_late=False, ignore_result=True)
def deliver_push(subscription_id: int, token: str) -> None:
    """One session, as releases before `deliver_push_sessions` asked: a queue may hold these during an upgrade."""
    engine().start_session(subscription_id, token)


@shared_task(ignore_result=True, expires=5)
def dispatch_push_sessions() -> int:
    """Start sessions for subscriptions with queued work or retries due soon."""
    return len(claims.start_sessions(claims.subscriptions_with_due_work()))


@shared_task(ignore_result=True, expires=10)
def sweep_outbox() -> int:
    """Send deliveries still pending after the grace period (broker was down, process died)."""
    return outbox.sweep_pending()


@shared_task(ignore_result=True, expires=10)
def release_stalled_keys() -> int:
    """Release the next event of ordering keys left with nothing in flight (delivery/sequencing.py's safety net)."""
    return sequencing.release_stalled()


@shared_task(ignore_result=True, expires=10)
def expire_overdue() -> int:
    """Record what the broker expired, and mark deliveries of expired messages `expired`."""
    return expiry.expire_overdue()


@shared_task(ignore_result=True, autoretry_for=(QueueInUse,), retry_backoff=1, retry_backoff_max=10,
             max_retries=30)
def delete_queue(destination: str) -> bool:
    """Remove the broker queue of a deleted subscription, with what is left on it, once its consumers are gone."""
    return subscription_teardown.delete_queue(destination)


@shared_task(ignore_result=True, expires=5)
def expire_leases() -> int:
    """Redeliver (or dead-letter) pulled messages whose lease ran out unacknowledged."""
    return pull.expire_leases()


@shared_task(ignore_result=True, expires=10)
def resend_lost_frames() -> int:
    """Send again the deliveries overdue with no frame left on the broker (delivery/watchdog.py)."""
    return watchdog.resend_lost()


@shared_task(ignore_result=True, expires=30)
def disable_long_open_breakers() -> int:
    """Disable subscriptions whose circuit breaker stayed open too long (delivery/long_open_breakers.py)."""
    return len(long_open_breakers.disable_long_open())
