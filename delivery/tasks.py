"""Celery tasks: thin wrappers that take ids and call the delivery actions."""

from __future__ import annotations

from celery import shared_task

from delivery import expiry, outbox, pull, push, retire, watchdog


@shared_task(acks_late=False, ignore_result=True)
def deliver_push(subscription_id: int, token: str) -> int:
    """Run one push session for a subscription (its claim lapses by itself if this worker dies)."""
    return push.run_session(subscription_id, token)


@shared_task(ignore_result=True, expires=5)
def dispatch_push_sessions() -> int:
    """Start sessions for subscriptions with queued work or retries due soon."""
    return len(push.start_sessions(push.subscriptions_with_due_work()))


@shared_task(ignore_result=True, expires=10)
def sweep_outbox() -> int:
    """Send deliveries still pending after the grace period (broker was down, process died)."""
    return outbox.sweep_pending()


@shared_task(ignore_result=True, expires=10)
def expire_overdue() -> int:
    """Mark deliveries of expired messages `expired`."""
    return expiry.expire_overdue()


@shared_task(ignore_result=True)
def delete_queue(destination: str) -> bool:
    """Remove the broker queue of a deleted subscription, with what is left on it."""
    return retire.delete_queue(destination)


@shared_task(ignore_result=True, expires=5)
def expire_leases() -> int:
    """Redeliver (or dead-letter) pulled messages whose lease ran out unacknowledged."""
    return pull.expire_leases()


@shared_task(ignore_result=True, expires=10)
def resend_lost_frames() -> int:
    """Send again the deliveries overdue with no frame left on the broker (delivery/watchdog.py)."""
    return watchdog.resend_lost()
