"""The retry-schedule preview: when each redelivery would happen, and how the message ends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from console.forms.schedule import RETRY_FIELDS, RetrySettingsForm
from console.text import duration
from rooms.models import Room
from subscriptions.models import Subscription
from subscriptions.retry import RetryPolicy


@dataclass(frozen=True)
class Redelivery:
    number: int  # redelivery k is attempt k + 1
    delay_ms: int  # the wait after failed attempt k
    at_ms: int  # from the first attempt, leaving out how long the attempts themselves take
    capped: bool  # the cap, not d × m^k, set the delay
    after_expiry: bool  # the room's expiration comes first: this redelivery never happens

    @property
    def attempt(self) -> int:
        return self.number + 1

    @property
    def delay(self) -> str:
        return duration(self.delay_ms)

    @property
    def at(self) -> str:
        return duration(self.at_ms)


@dataclass(frozen=True)
class Schedule:
    policy: RetryPolicy
    expiration_ms: int | None
    redeliveries: list[Redelivery]

    @property
    def cut(self) -> Redelivery | None:
        """Return the first redelivery the room's expiration comes before, or None."""
        return next((r for r in self.redeliveries if r.after_expiry), None)

    @property
    def expires_after_attempt(self) -> int | None:
        """Return the attempt whose failure ends in expiry (its redelivery would come too late), or None."""
        return self.cut.number if self.cut else None

    @property
    def shown(self) -> list[Redelivery]:
        """Return the redeliveries up to the first one cut by the expiration."""
        return self.redeliveries[: self.cut.number] if self.cut else self.redeliveries

    @property
    def not_shown(self) -> int:
        return len(self.redeliveries) - len(self.shown)

    @property
    def attempts(self) -> int:
        """Return how many attempts happen at most."""
        return self.expires_after_attempt or self.policy.attempts + 1

    @property
    def ends_at(self) -> str:
        """Return when the last attempt starts, as text."""
        happening = [r for r in self.redeliveries if not r.after_expiry]
        return duration(happening[-1].at_ms if happening else 0)

    @property
    def delay(self) -> str:
        return duration(self.policy.delay_ms)

    @property
    def cap(self) -> str:
        return "none" if self.policy.max_delay_ms is None else duration(self.policy.max_delay_ms)

    @property
    def expiration(self) -> str:
        return duration(self.expiration_ms) if self.expiration_ms else "never"


def schedule(policy: RetryPolicy, expiration_ms: int | None) -> Schedule:
    """Lay out the policy's redeliveries on a clock starting at the first attempt, cut by the expiration."""
    rows, at = [], 0
    for number, delay in enumerate(policy.schedule(), start=1):
        at += delay
        uncapped = policy.delay_ms * policy.multiplier**number
        rows.append(Redelivery(
            number=number, delay_ms=delay, at_ms=at,
            capped=policy.max_delay_ms is not None and uncapped > policy.max_delay_ms,
            after_expiry=bool(expiration_ms) and at >= expiration_ms,
        ))
    return Schedule(policy, expiration_ms or None, rows)


def settings_values(owner: Room | Subscription, *, expiration: bool = False) -> dict[str, Any]:
    """Return the delivery settings set on a room or subscription (unset overrides left out)."""
    names = [*RETRY_FIELDS, "message_expiration_ms"] if expiration else list(RETRY_FIELDS)
    if isinstance(owner, Subscription):
        names += PACE_FIELDS
    return {name: getattr(owner, name) for name in names if getattr(owner, name) is not None}


PACE_FIELDS = ["max_in_flight", "max_per_second"]


@dataclass(frozen=True)
class Pace:
    """How fast a push subscription's POSTs may go, as the preview shows it."""

    max_in_flight: int | None
    max_per_second: int | None

    def backlog_s(self, messages: int = 1000) -> float | None:
        """The least time `messages` take at max_per_second (None without a limit)."""
        return messages / self.max_per_second if self.max_per_second else None


def pace(values: Mapping[str, Any]) -> Pace:
    """Read max_in_flight and max_per_second from form values (blank or unreadable: none)."""
    def number(name: str) -> int | None:
        value = values.get(name)
        try:
            return int(value) if value not in (None, "") and int(value) > 0 else None
        except (TypeError, ValueError):
            return None
    return Pace(number("max_in_flight"), number("max_per_second"))


def schedule_context(values: Mapping[str, Any], overrides_of: Room | None = None) -> dict[str, Any]:
    """Return the preview's context for these form values: the schedule, or the errors in its way."""
    settings = RetrySettingsForm(values, overrides_of=overrides_of)
    if not settings.is_valid():
        return {"preview_form": settings, "preview": None}
    policy, sources = settings.policy()
    return {"preview_form": settings, "preview": schedule(policy, settings.expiration_ms),
            # Where each value comes from matters only when a subscription overrides its room.
            "sources": sources if overrides_of is not None else None,
            "pace": pace(values) if overrides_of is not None else None}


def summary(policy: RetryPolicy) -> str:
    """Describe a policy in a few words: "5 redeliveries from 2 s, ×1.5, cap 1 min"."""
    if policy.attempts == 0:
        return "no redelivery"
    text = f"{policy.attempts} redeliver{'y' if policy.attempts == 1 else 'ies'} from {duration(policy.delay_ms)}"
    text += f", ×{policy.multiplier:g}" if policy.multiplier != 1 else ", fixed"
    return text + (f", cap {duration(policy.max_delay_ms)}" if policy.max_delay_ms is not None else "")


def expiration(ms: int | None) -> str:
    return duration(ms) if ms else "never"
