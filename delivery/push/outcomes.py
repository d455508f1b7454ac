"""What the outcome of a POST does: delivered, retried, dead-lettered, the subscription disabled.

Called by the bookkeeper with the POSTs that finished together, from any number of sessions:
the successes are recorded in one transaction, the failures per subscription (their retry
copies sent together); each frame is acked only after its outcome is recorded (settle.py).
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.utils import timezone

from delivery import settle
from delivery.attempts import Attempt
from delivery.broker import Broker, BrokerError
from delivery.transports import PushResult

log = logging.getLogger("delivery.push")


def record_outcomes(broker: Broker, finished: list[tuple[Attempt, PushResult]]) -> None:
    """Record finished POSTs and ack their frames; a frame whose outcome could not be recorded stays unacked."""
    successes = [(attempt, result) for attempt, result in finished if result.ok]
    if successes:
        settle.record_successes([settle.Success(a.delivery, a.attempt, a.started_at, r) for a, r in successes])
        ack_recorded([attempt for attempt, _ in successes])
    failures: dict[int, list[tuple[Attempt, PushResult]]] = defaultdict(list)
    for attempt, result in finished:
        if not result.ok:
            failures[attempt.arrival.subscription.pk].append((attempt, result))
    for group in failures.values():
        record_failures(broker, group)


def record_failures(broker: Broker, finished: list[tuple[Attempt, PushResult]]) -> None:
    """Settle one subscription's failed POSTs (retry, dead-letter, 410 disables: docs/contract.md#push); ack them."""
    subscription = finished[0][0].arrival.subscription
    subscription.record_error(finished[-1][1].error)
    if any(result.gone for _, result in finished):
        subscription.disable(f"{subscription.push_url} answered 410 Gone on {timezone.now():%Y-%m-%d %H:%M:%S} UTC")
    statuses = settle.settle_failures(
        broker, [settle.Failure(a.delivery, a.frame.body, a.attempt, a.started_at, r) for a, r in finished],
        subscription.retry_policy)
    # Unconfirmed copies leave their originals unacked: they must come back.
    ack_recorded([attempt for (attempt, _), status in zip(finished, statuses, strict=True) if status is not None])


def ack_recorded(attempts: list[Attempt]) -> None:
    """Ack the frames of recorded attempts, each consumer's in one write."""
    by_consumer: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        by_consumer[id(attempt.arrival.consumer)].append(attempt)
    for group in by_consumer.values():
        try:
            group[0].arrival.consumer.ack_many([attempt.frame for attempt in group])
        except BrokerError:
            log.debug("acks not sent; the frames come back and are judged stale copies")
