"""What the outcome of a POST does: delivered, retried, dead-lettered, the subscription disabled.

Run by the bookkeeper (steps.py hands it what the one-statement path does not take) with the POSTs
that finished together, from any number of sessions: the successes are recorded in one transaction
(an ordered delivery's with the release of its key's next event, delivery/sequencing.py), the
failures per subscription (their retry copies sent together); each frame is acked only after its
outcome is recorded (delivery/settle.py).
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.utils import timezone

from delivery import settle
from delivery.attempts import Attempt
from delivery.broker import Broker, BrokerError, Consumer, ReceivedMessage
from delivery.transports import PushResult

log = logging.getLogger("delivery.push")


def record_outcomes(broker: Broker, finished: list[tuple[Attempt, PushResult]]) -> list[str | None]:
    """Record finished POSTs and ack their frames; return each one's new status (None: not recorded, left unacked)."""
    statuses: list[str | None] = [None] * len(finished)
    successes = [index for index, (_, result) in enumerate(finished) if result.ok]
    if successes:
        settle.record_successes([settle.Success(a.delivery, a.attempt, a.started_at, r)
                                 for a, r in (finished[index] for index in successes)])
        ack_recorded(broker, [finished[index][0] for index in successes])
        for index in successes:
            statuses[index] = settle.Status.DELIVERED
    failures: dict[int, list[int]] = defaultdict(list)
    for index, (attempt, result) in enumerate(finished):
        if not result.ok:
            failures[attempt.arrival.subscription.pk].append(index)
    for indices in failures.values():
        for index, status in zip(indices, record_failures(broker, [finished[i] for i in indices]), strict=True):
            statuses[index] = status
    return statuses


def record_failures(broker: Broker, finished: list[tuple[Attempt, PushResult]]) -> list[str | None]:
    """Settle one subscription's failed POSTs (retry, dead-letter, 410 disables: docs/contract.md#push); ack them.

    Return each one's new status, None where its retry copy was not confirmed (its frame stays unacked).
    """
    subscription = finished[0][0].arrival.subscription
    subscription.record_error(finished[-1][1].error)
    if any(result.gone for _, result in finished):
        subscription.disable(f"{subscription.push_url} answered 410 Gone on {timezone.now():%Y-%m-%d %H:%M:%S} UTC")
    statuses = settle.settle_failures(
        broker, [settle.Failure(a.delivery, a.frame.body, a.attempt, a.started_at, r) for a, r in finished],
        subscription.retry_policy)
    # Unconfirmed copies leave their originals unacked: they must come back.
    ack_recorded(broker, [attempt for (attempt, _), status in zip(finished, statuses, strict=True)
                          if status is not None])
    return statuses


def ack_recorded(broker: Broker, attempts: list[Attempt]) -> None:
    """Ack the frames of recorded attempts, every consumer's together (one write on STOMP)."""
    by_consumer: dict[int, tuple[Consumer, list[ReceivedMessage]]] = {}
    for attempt in attempts:
        by_consumer.setdefault(id(attempt.arrival.consumer), (attempt.arrival.consumer, []))[1].append(attempt.frame)
    try:
        broker.ack_together(list(by_consumer.values()))
    except BrokerError:
        log.debug("acks not sent; the frames come back and are judged stale copies")
