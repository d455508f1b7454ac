"""Turn received frames into attempts to make, applying the frame rules: the step push and pull share.

Frames that arrive together — one push session's burst, or the bursts of many sessions that a
worker's push engine gathers — are judged together: on PostgreSQL one statement claims every
fresh attempt of the burst (the common case: `start_attempts` here, run by pull; the push path
runs it on its event loop, delivery/push/steps.py); the others, and every frame on SQLite, are judged
against their rows read in one SELECT, with one conditional UPDATE per attempt number claiming
the new attempts. A burst costs one or two queries, not two per frame. Verdicts other than a claim
are applied here at once (drop, expire, wait, poison), and their frames acked. A second frame of
the same delivery in a burst is judged after the first, against what the first one changed.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from delivery import frames, settle
from delivery.broker import Broker, BrokerError, Consumer, ReceivedMessage
from delivery.frame_rules import Action, judge
from delivery.frames import FrameInfo
from delivery.models import Delivery, DeliveryState, SendRecord
from delivery.statements import FreshClaim
from subscriptions.models import Subscription

log = logging.getLogger("delivery.attempts")

CLAIM_RACE_RECHECK_MS = 1000  # a claim lost to another worker's copy: look again this much later


@dataclass(frozen=True)
class Arrival:
    """A frame received for a subscription, and the consumer that must ack it."""

    subscription: Subscription
    consumer: Consumer
    frame: ReceivedMessage


@dataclass(frozen=True)
class Attempt:
    """An attempt to make now: its delivery (with message), the frame that carries it, when it started."""

    delivery: DeliveryState
    arrival: Arrival
    attempt: int
    started_at: datetime

    @property
    def frame(self) -> ReceivedMessage:
        return self.arrival.frame


def start_attempts(broker: Broker, arrivals: list[Arrival]) -> list[Attempt | None]:
    """Judge frames that arrived together; return, for each, the attempt to make now or None (settled now).

    The common case — a fresh attempt of an unsettled delivery — is claimed for the whole burst in
    one statement where the database allows it (Delivery.objects.claim_fresh); the other frames
    are judged one by one against their rows (`judge_frames`). Pull runs this; the push path runs
    the same two steps, its one-statement claim on its event loop (delivery/push/steps.py).
    """
    results: list[Attempt | None] = [None] * len(arrivals)
    parsed = parse_frames(arrivals)
    if fresh := fresh_claims(arrivals, parsed):
        now = timezone.now()
        claimed = Delivery.objects.claim_fresh([claim for _, claim in fresh], now) or {}
        for index, claim in fresh:
            if (state := claimed.pop(claim.delivery_id, None)) is not None:
                results[index] = Attempt(state, arrivals[index], claim.attempt, now)
    rest = [(index, info) for index, info in parsed if results[index] is None]
    if rest:
        judge_one_by_one(broker, arrivals, rest, results)
    return results


def judge_frames(broker: Broker, arrivals: list[Arrival]) -> list[Attempt | None]:
    """Judge each frame by the frame rules against its row, without the one-statement claim; the attempts, in order."""
    results: list[Attempt | None] = [None] * len(arrivals)
    if parsed := parse_frames(arrivals):
        judge_one_by_one(broker, arrivals, parsed, results)
    return results


def parse_frames(arrivals: list[Arrival]) -> list[tuple[int, FrameInfo]]:
    """Read each frame's Dovecote headers, by index; a frame without them is acked and left out."""
    parsed = []
    for index, arrival in enumerate(arrivals):
        try:
            parsed.append((index, FrameInfo.of(arrival.frame)))
        except ValueError:
            log.error("dropping a frame without Dovecote headers on %s", arrival.frame.destination)
            _ack(arrival)
    return parsed


def fresh_claims(arrivals: list[Arrival], parsed: list[tuple[int, FrameInfo]]) -> list[tuple[int, FreshClaim]]:
    """The claims to try in one statement: the first frame of each delivery, by index."""
    fresh, seen = [], set()
    for index, info in parsed:
        if info.delivery_id in seen:
            continue  # a second frame of a delivery is judged after the first, one by one
        seen.add(info.delivery_id)
        try:
            message_id = uuid.UUID(arrivals[index].frame.headers.get(frames.MESSAGE_ID, ""))
        except ValueError:
            continue
        fresh.append((index, FreshClaim(info.delivery_id, info.attempt, arrivals[index].subscription.pk, message_id)))
    return fresh


def judge_one_by_one(broker: Broker, arrivals: list[Arrival], parsed: list[tuple[int, FrameInfo]],
                     results: list[Attempt | None]) -> None:
    """Apply the frame rules to each frame against its row: one SELECT, one claim UPDATE per attempt number."""
    deliveries = load_deliveries({info.delivery_id for _, info in parsed})
    now = timezone.now()
    claims: dict[int, list[tuple[int, DeliveryState]]] = defaultdict(list)
    seen: set[int] = set()
    again: list[int] = []
    for index, info in parsed:
        if info.delivery_id in seen:
            again.append(index)
            continue
        seen.add(info.delivery_id)
        arrival = arrivals[index]
        delivery = deliveries.get(info.delivery_id)
        verdict = judge(delivery, subscription_id=arrival.subscription.pk,
                        message_id=arrival.frame.headers.get(frames.MESSAGE_ID, ""), attempt=info.attempt,
                        timeout_ms=arrival.subscription.timeout_ms, now=now)
        if verdict.action is Action.CLAIM:
            assert delivery is not None
            claims[info.attempt].append((index, delivery))
        else:
            results[index] = apply(broker, arrival, delivery, info.attempt, verdict.action, verdict.reason,
                                   verdict.wait_ms)
    for attempt, candidates in claims.items():
        claimed = claim_attempts([delivery.pk for _, delivery in candidates], attempt, now)
        for index, delivery in candidates:
            if delivery.pk in claimed:
                delivery.attempts, delivery.attempt_started_at = attempt, now
                results[index] = Attempt(delivery, arrivals[index], attempt, now)
            else:  # another worker's copy claimed it first: look again once its attempt must be over
                defer(broker, arrivals[index], delivery, attempt, CLAIM_RACE_RECHECK_MS)
    for index in again:
        [results[index]] = start_attempts(broker, [arrivals[index]])


def apply(broker: Broker, arrival: Arrival, delivery: DeliveryState | None, attempt: int, action: Action,
          reason: str, wait_ms: int) -> Attempt | None:
    """Carry out a verdict other than a claim; return the attempt to make if the verdict resumes one."""
    if action is Action.DROP:
        log.debug("dropping a frame: %s", reason)
    elif action is Action.EXPIRE:
        assert delivery is not None
        settle.expire(delivery, attempt)
    elif action is Action.WAIT:
        assert delivery is not None
        defer(broker, arrival, delivery, attempt, wait_ms)
        return None
    elif action in (Action.POISON, Action.RESUME):
        assert delivery is not None
        settle.record_crash(delivery, attempt)
        if action is Action.RESUME:
            return Attempt(delivery, arrival, attempt, timezone.now())
        settle.dead_letter(delivery, attempt, reason)
    _ack(arrival)
    return None


def hold_frames(broker: Broker, arrivals: list[Arrival], delay_ms: int) -> None:
    """Put frames back on the broker for `delay_ms` without starting their attempts (an open circuit breaker).

    Each frame is judged first: what the rules settle now (a stale copy, an expired message, a
    poison message) is settled as usual; an attempt that would start (or start again) is deferred
    with its number unchanged, so holding counts no attempt.
    """
    parsed = parse_frames(arrivals)
    deliveries = load_deliveries({info.delivery_id for _, info in parsed})
    now = timezone.now()
    held = []
    for index, info in parsed:
        arrival = arrivals[index]
        delivery = deliveries.get(info.delivery_id)
        verdict = judge(delivery, subscription_id=arrival.subscription.pk,
                        message_id=arrival.frame.headers.get(frames.MESSAGE_ID, ""), attempt=info.attempt,
                        timeout_ms=arrival.subscription.timeout_ms, now=now)
        if verdict.action in (Action.CLAIM, Action.RESUME):
            assert delivery is not None
            if defer(broker, arrival, delivery, info.attempt, delay_ms):
                held.append(delivery.pk)
        else:
            apply(broker, arrival, delivery, info.attempt, verdict.action, verdict.reason, verdict.wait_ms)
    if held:  # the log and the sweepers see when they are due now
        Delivery.objects.filter(pk__in=held).mark_held(now + timedelta(milliseconds=delay_ms), now)


def withdraw(attempt: Attempt) -> bool:
    """Give back a claimed attempt that was not sent (its subscription stopped POSTs meanwhile); False if it moved on.

    Its frame stays unacked: taken again, it is judged afresh and claims the same attempt number.
    """
    return bool(Delivery.objects.filter(pk=attempt.delivery.pk).withdraw_attempt(
        attempt.attempt, attempt.started_at, timezone.now()))


def claim_attempts(delivery_ids: list[int], attempt: int, now: datetime) -> set[int]:
    """Start attempt `attempt` of each delivery still before it and unsettled; return the ids claimed."""
    claimed = Delivery.objects.filter(pk__in=delivery_ids).claim_attempt(attempt, now)
    if claimed == len(delivery_ids):
        return set(delivery_ids)
    # Some were taken by another worker (or settled) meanwhile: ours carry this claim's timestamp.
    return set(Delivery.objects.filter(pk__in=delivery_ids, attempts=attempt, attempt_started_at=now)
               .values_list("pk", flat=True))


def defer(broker: Broker, arrival: Arrival, delivery: DeliveryState, attempt: int, delay_ms: int) -> bool:
    """Put the same attempt back on the broker to be looked at again after `delay_ms`, then ack this copy."""
    try:
        broker.send(frames.frame_for(delivery, attempt=attempt, delay_ms=delay_ms, next_delay_ms=None,
                                     body=arrival.frame.body))
    except BrokerError:
        log.warning("could not put back attempt %d of delivery %s; the broker redelivers it", attempt, delivery.pk)
        return False  # unacked: it comes back
    settle.record_send(delivery, SendRecord.Kind.RECHECK, delivery.destination, attempt, delay_ms)
    _ack(arrival)
    return True


def load_deliveries(ids: set[int]) -> dict[int, DeliveryState]:
    """Read the deliveries of these ids with their messages (not their payloads: frames carry them), in one query."""
    return Delivery.objects.filter(pk__in=ids).states() if ids else {}


def _ack(arrival: Arrival) -> None:
    try:
        arrival.consumer.ack(arrival.frame)
    except BrokerError:
        log.debug("ack not sent; the broker redelivers the frame and it is judged again")
