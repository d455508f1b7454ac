"""The circuit breaker of a push subscription: when to stop calling a failing endpoint, and how to probe it.

The states (docs/delivery-semantics.md#circuit-breaker), kept on the subscription row and changed
only by `Subscription.move_breaker`, which records every change as a BreakerTransition:

    closed ──(threshold consecutive failures, or the failure ratio over the window)──▶ open
    open ──(the next probe time comes)──▶ half_open: one attempt at a time, the probe
    half_open ──(the probe succeeds)──▶ closed        half_open ──(the probe fails)──▶ open
    open or half_open for longer than `disable_after_s` ──▶ the subscription is disabled

While open, no attempt is made: every frame that arrives is put back on the broker until the next
probe time with the same attempt number (not counted, its EBR clock paused). Probe n (0-based,
counting the failed probes since the breaker opened) runs `probe_delay_ms(n)` after the breaker
opened or after the previous probe failed: min(probe_delay × 2^n, MAX_PROBE_DELAY_MS).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PROBE_DELAY_MS = 10 * 60 * 1000  # probes of a long outage: at least one every 10 minutes
MIN_RATIO_ATTEMPTS = 20  # the failure ratio is judged over at least this many attempts in the window
DISABLE_AFTER_DEFAULT_S = 5 * 24 * 3600


@dataclass(frozen=True)
class BreakerPolicy:
    """A subscription's effective breaker settings: its overrides, else its room's."""

    failure_threshold: int  # consecutive failed attempts that open the breaker; 0: this rule is off
    failure_ratio: float | None  # failed / all attempts in the window that open it; None: this rule is off
    window_s: int  # the failure ratio's window
    probe_delay_ms: int  # the first probe's delay, doubled after each failed probe
    disable_after_s: int  # open (or half-open) this long: the subscription is disabled

    def trips_on_consecutive(self, failures: int) -> bool:
        """Say whether this many consecutive failed attempts open the breaker."""
        return self.failure_threshold > 0 and failures >= self.failure_threshold

    def trips_on_ratio(self, failed: int, attempts: int) -> bool:
        """Say whether `failed` of `attempts` in the window open the breaker (never below MIN_RATIO_ATTEMPTS)."""
        return (self.failure_ratio is not None and attempts >= MIN_RATIO_ATTEMPTS
                and failed / attempts >= self.failure_ratio)

    def probe_delay(self, failed_probes: int) -> int:
        """The ms to wait before the next probe, after `failed_probes` failed probes since the breaker opened."""
        return int(min(self.probe_delay_ms * 2 ** min(failed_probes, 32), MAX_PROBE_DELAY_MS))

    def schedule(self, probes: int = 6) -> list[int]:
        """The delays before the first `probes` probes of an outage, in ms (for the UI and the docs)."""
        return [self.probe_delay(n) for n in range(probes)]
