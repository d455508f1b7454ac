"""The redelivery rule (docs/contract.md#redelivery): exponential backoff, capped, limited in count."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rooms.models import Room
from rooms.rules import MAX_SPAN_MS

# The broker schedules with a millisecond delay; beyond a year a "retry" is no retry at all,
# and an uncapped d × m^k overflows quickly, so delays are clamped here.
LONGEST_DELAY_MS = MAX_SPAN_MS


@dataclass(frozen=True)
class RetryPolicy:
    """Effective delivery settings of a subscription: d, m, n and the cap."""

    delay_ms: int
    multiplier: float
    attempts: int  # redeliveries allowed after the first attempt; 0: none
    max_delay_ms: int | None = None

    @classmethod
    def of_room(cls, room: Room) -> RetryPolicy:
        """Return a room's own delivery settings: what its subscriptions without overrides follow."""
        return cls(delay_ms=room.delivery_delay_ms, multiplier=room.delivery_delay_multiplier,
                   attempts=room.delivery_attempts, max_delay_ms=room.max_delivery_delay_ms)

    def can_retry(self, attempt: int) -> bool:
        """Say whether failed attempt `attempt` (1 = first try) may be redelivered."""
        return 1 <= attempt <= self.attempts

    def delay_after(self, attempt: int, *, at_least_ms: int | float | None = None) -> int:
        """Return the ms to wait after failed attempt `attempt` before redelivery: min(d × m^k, cap).

        `at_least_ms` (a receiver's Retry-After) lengthens the wait; like every delay, the result
        is at most LONGEST_DELAY_MS whatever the inputs, so no caller's date arithmetic can overflow.
        """
        if attempt < 1:
            raise ValueError(f"attempt must be 1 or more, not {attempt}")
        try:
            delay = self.delay_ms * math.pow(self.multiplier, attempt)
        except OverflowError:
            delay = math.inf
        if self.max_delay_ms is not None:
            delay = min(delay, self.max_delay_ms)
        if at_least_ms is not None and not math.isnan(at_least_ms):
            delay = max(delay, at_least_ms)
        return int(min(delay, LONGEST_DELAY_MS))

    def schedule(self) -> list[int]:
        """Return the delay before each redelivery, in order (empty when attempts is 0)."""
        return [self.delay_after(k) for k in range(1, self.attempts + 1)]
