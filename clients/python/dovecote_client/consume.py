"""A pull-ack loop: lease messages, hand each to a function, ack what it handled, nack the rest."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dovecote_api.api.subscriptions import subscriptions_ack, subscriptions_nack, subscriptions_pull
from dovecote_api.models import AckRequest, NackRequest, PulledMessage, PullRequest

if TYPE_CHECKING:
    from dovecote_client.dovecote import Dovecote

log = logging.getLogger("dovecote_client")

Handler = Callable[[PulledMessage], object]


class Retry(Exception):
    """Raise from a handler to have the message delivered again, after `delay_ms` or the EBR delay."""

    def __init__(self, delay_ms: int | None = None) -> None:
        super().__init__(f"retry after {delay_ms} ms" if delay_ms is not None else "retry")
        self.delay_ms = delay_ms


class DeadLetter(Exception):
    """Raise from a handler to dead-letter the message at once."""


@dataclass
class Consumed:
    """What a consume loop did so far; its `stop` function is shown this after every pull."""

    pulls: int = 0
    empty_pulls: int = 0
    acked: int = 0
    retried: int = 0
    dead_lettered: int = 0
    lost: int = 0  # ack ids Dovecote refused: their lease ran out first, so they come back as a failed attempt


def consume(dovecote: Dovecote, subscription_id: int, handler: Handler, *, max_messages: int = 10,
            lease_ms: int = 30_000, wait_ms: int = 20_000,
            stop: Callable[[Consumed], bool] = lambda consumed: False) -> Consumed:
    """Pull and handle messages until `stop(consumed)` is true; return the totals.

    A handler that returns acks its message. `Retry` and any other exception nack it for another
    attempt (the exception is logged); `DeadLetter` dead-letters it. Each pull's outcomes are settled
    together: one ack, one nack per kind. A message whose lease runs out while its handler works
    comes back as a failed attempt, so keep `lease_ms` above the slowest handler.
    """
    consumed = Consumed()
    while not stop(consumed):
        pulled = dovecote.call(subscriptions_pull, subscription_id,
                               body=PullRequest(max_messages=max_messages, lease_ms=lease_ms, wait_ms=wait_ms))
        consumed.pulls += 1
        consumed.empty_pulls += not pulled.messages
        settle(dovecote, subscription_id, [(m.ack_id, outcome(handler, m)) for m in pulled.messages], consumed)
    return consumed


Outcome = tuple[str, int | None]  # ("ack" | "retry" | "dead_letter", delay_ms)


def outcome(handler: Handler, message: PulledMessage) -> Outcome:
    try:
        handler(message)
    except DeadLetter:
        return "dead_letter", None
    except Retry as retry:
        return "retry", retry.delay_ms
    except Exception:
        log.exception("handler failed on message %s (attempt %s): it will be retried",
                      message.message_id, message.attempt)
        return "retry", None
    return "ack", None


def settle(dovecote: Dovecote, subscription_id: int, outcomes: list[tuple[str, Outcome]],
           consumed: Consumed) -> None:
    """Ack the handled messages in one call and nack the others, one call per action and delay."""
    groups: dict[Outcome, list[str]] = defaultdict(list)
    for ack_id, result in outcomes:
        groups[result].append(ack_id)
    for (action, delay_ms), ack_ids in groups.items():
        if action == "ack":
            settled = dovecote.call(subscriptions_ack, subscription_id, body=AckRequest(ack_ids=ack_ids))
            consumed.acked += len(settled.done)
        else:
            body = NackRequest(ack_ids=ack_ids, action=action)
            if delay_ms is not None:
                body.delay_ms = delay_ms
            settled = dovecote.call(subscriptions_nack, subscription_id, body=body)
            if action == "retry":
                consumed.retried += len(settled.done)
            else:
                consumed.dead_lettered += len(settled.done)
        consumed.lost += len(settled.failed)
