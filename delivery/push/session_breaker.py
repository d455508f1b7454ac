"""The circuit breaker as a push session runs it (the rules: subscriptions/breaker_rules.py).

A hot subscription may have a session on several workers at once (claims.py). Each session counts
its outcomes in memory: the consecutive failures, added to the subscription row's count at most once a
second and when the session ends (`record_failures`: an addition, or a reset after a success, in one
UPDATE, so two sessions never overwrite each other's failures) and read back, so each session judges
by the whole subscription's count; and the attempts of the failure-ratio window (in memory only: its
own share of the outcomes; a new session starts a new window). It decides each transition from its
own copy of the state, and the bookkeeper's threads record it (`Subscription.move_breaker`, a
compare-and-set on the state: of two sessions opening it at once, one does) before the session acts
on it; the others take the new state at the engine's next reread. The state is read from memory on
every frame, never from the database.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from django.utils import timezone

from delivery.attempts import Attempt
from delivery.transports import PushResult
from subscriptions.breaker_rules import BreakerPolicy
from subscriptions.models import Subscription

Breaker = Subscription.Breaker


@dataclass(frozen=True)
class Move:
    """A transition to record: where to, why, and the attempt that caused it."""

    to: str
    reason: str
    delivery_id: int | None = None
    attempt: int | None = None


class OutcomeCounter:
    """A session's count of consecutive failures and of the attempts in the failure-ratio window."""

    def __init__(self, failures: int) -> None:
        self.failures = failures  # the subscription's count as far as the session knows: the row's, plus its own
        self.unwritten = 0  # failures counted since the row last got them (after the success, if `reset`)
        self.reset = False  # a success since the row last got the count: the row restarts from `unwritten`
        self.window: deque[tuple[float, bool]] = deque()  # (monotonic time, failed)
        self.failed_in_window = 0

    def take_unwritten(self) -> tuple[int, bool]:
        """The failures to add to the row (and whether it restarts from them); from now on they are written."""
        taken = (self.unwritten, self.reset)
        self.unwritten, self.reset = 0, False
        return taken

    def written(self, row: int, taken: tuple[int, bool]) -> None:
        """Take the row's count after a write, plus what was counted meanwhile; or keep `taken` for the next write."""
        if row < 0:  # the write failed
            self.unwritten, self.reset = (self.unwritten, True) if self.reset else (self.unwritten + taken[0], taken[1])
        elif not self.reset:
            self.failures = row + self.unwritten

    def count(self, failed: bool, window_s: int, now: float) -> None:
        self.failures = self.failures + 1 if failed else 0
        self.unwritten = self.unwritten + 1 if failed else 0
        self.reset = self.reset or not failed
        self.window.append((now, failed))
        self.failed_in_window += failed
        while self.window and self.window[0][0] < now - window_s:
            _, old_failed = self.window.popleft()
            self.failed_in_window -= old_failed


def judge_outcome(state: str, counter: OutcomeCounter, policy: BreakerPolicy, attempt: Attempt,
                  result: PushResult) -> Move | None:
    """Count an attempt's outcome; return the breaker transition it causes, if any.

    A success closes an open or half-open breaker (a probe, or an attempt started before it opened);
    a failed probe opens it again; on a closed breaker, a failure opens it when the consecutive
    failures reach the threshold or the failed share of the window reaches the ratio.
    """
    counter.count(not result.ok, policy.window_s, time.monotonic())
    delivery_id, number = attempt.delivery.pk, attempt.attempt
    if result.ok:
        if state == Breaker.CLOSED:
            return None
        return Move(Breaker.CLOSED, f"attempt {number} succeeded (HTTP {result.status_code})", delivery_id, number)
    if state == Breaker.HALF_OPEN:
        return Move(Breaker.OPEN, f"the probe failed: {result.error}", delivery_id, number)
    if state != Breaker.CLOSED:
        return None
    if policy.trips_on_consecutive(counter.failures):
        return Move(Breaker.OPEN, f"{counter.failures} consecutive attempts failed, the last: {result.error}",
                    delivery_id, number)
    attempts = len(counter.window)
    if policy.trips_on_ratio(counter.failed_in_window, attempts):
        return Move(Breaker.OPEN, f"{counter.failed_in_window} of the {attempts} attempts in the last "
                                  f"{policy.window_s} s failed (at least {policy.failure_ratio:.0%} opens it), "
                                  f"the last: {result.error}", delivery_id, number)
    return None


def record_move(subscription: Subscription, move: Move, failures: int | None) -> bool:
    """Record a transition decided by a session (on a bookkeeper thread); False if the state moved meanwhile."""
    return subscription.move_breaker(move.to, move.reason, now=timezone.now(), delivery_id=move.delivery_id,
                                     attempt=move.attempt, failures=failures)


def record_failures(subscription_id: int, added: int, reset: bool) -> int:
    """Add a session's failures to the row's consecutive-failure count (restart it after a success); return it."""
    return Subscription.objects.add_failures(subscription_id, added, reset=reset)


def probe_now(subscription: Subscription) -> bool:
    """The probe time has come: make the breaker half-open (on a bookkeeper thread)."""
    return subscription.move_breaker(Breaker.HALF_OPEN, "the probe time came: one attempt probes the endpoint",
                                     now=timezone.now())
