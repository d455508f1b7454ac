"""What a received frame means, judged against its delivery row: the rules push and pull share.

A frame carries one attempt of one delivery (`dovecote-delivery-id`, `dovecote-attempt`). The
broker may hand over a frame more than once (a consumer died, a retry copy raced its
original), and frames outlive deliveries (deleted, settled, another database on the same
broker), so every frame is judged before anything is done with it. `judge` is pure: it reads
the row and returns a verdict; push sessions and pull leases apply it (delivery/attempts.py).

The rules, in order (docs/delivery-semantics.md#crashes-and-poison-messages):
1. no row, a settled row, or a row of another subscription or message: DROP the frame;
2. the message has expired: EXPIRE the delivery;
3. a pull lease holds this attempt or a later one: DROP (a duplicate);
4. an older attempt, or this attempt with its outcome already recorded: DROP (a stale copy);
5. this attempt was started and never finished: WAIT until it must have ended (its worker may
   still be on it), then count a crash; past POISON_LIMIT crashes, dead-letter it (POISON),
   else start it again (RESUME);
6. a later attempt than the row's: CLAIM it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

from delivery.models import Delivery, DeliveryState

CRASH_GRACE = timedelta(seconds=5)  # beyond timeout_ms, before an unfinished attempt counts as crashed
POISON_LIMIT = 3  # attempts whose worker died, before the message is dead-lettered


class Action(enum.Enum):
    DROP = "drop"  # ack the frame, nothing else to do
    EXPIRE = "expire"  # record the delivery expired, ack the frame
    WAIT = "wait"  # put the same attempt back for `wait_ms`, ack this copy
    POISON = "poison"  # record the crash, dead-letter the delivery, ack the frame
    RESUME = "resume"  # record the crash, then start the attempt again
    CLAIM = "claim"  # start this attempt, if the claim on the row succeeds


@dataclass(frozen=True)
class Verdict:
    action: Action
    reason: str
    wait_ms: int = 0


def judge(delivery: Delivery | DeliveryState | None, *, subscription_id: int, message_id: str, attempt: int,
          timeout_ms: int, now: datetime) -> Verdict:
    """Return what to do with a frame carrying `attempt` of `delivery` (loaded with its message)."""
    if delivery is None:
        return Verdict(Action.DROP, "its delivery no longer exists")
    if delivery.is_final:
        return Verdict(Action.DROP, f"its delivery is already {delivery.status}")
    if delivery.subscription_id != subscription_id or str(delivery.message_id) != message_id:
        return Verdict(Action.DROP, "the frame belongs to another subscription or database")
    if delivery.message.is_expired(now):
        return Verdict(Action.EXPIRE, "the message expired before this attempt")
    if delivery.status == Delivery.Status.LEASED and attempt <= delivery.attempts:
        return Verdict(Action.DROP, "a pull lease holds this attempt")
    if attempt < delivery.attempts or (attempt == delivery.attempts and delivery.attempt_started_at is None):
        return Verdict(Action.DROP, "a stale copy: this attempt's outcome is recorded")
    if attempt == delivery.attempts:
        assert delivery.attempt_started_at is not None
        finish_by = delivery.attempt_started_at + timedelta(milliseconds=timeout_ms) + CRASH_GRACE
        if now < finish_by:
            return Verdict(Action.WAIT, "another worker may still be on this attempt",
                           wait_ms=max(0, int((finish_by - now).total_seconds() * 1000)))
        crashes = delivery.crashed_attempts + 1
        if crashes >= POISON_LIMIT:
            return Verdict(Action.POISON, f"poison message: the worker died {crashes} times while delivering it")
        return Verdict(Action.RESUME, "the worker died during this attempt")
    return Verdict(Action.CLAIM, "a new attempt")
