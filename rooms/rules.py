"""The bounds of a room's delivery settings (and of a subscription's overrides of them), and its event-type quota.

The API's serializers (api/rooms/, api/subscriptions/) and the console's forms (console/forms/)
build their fields from these bounds and apply these checks; each words the message for its own
readers (the API names JSON fields, the console its labels). The contract sets no upper bounds:
these keep every value one the broker and the retry rule (subscriptions/retry.py) can handle, and
bound the retries. The models' check constraints hold the floors in the database too.
"""

from __future__ import annotations

from django.conf import settings

from rooms.models import Room

MAX_DELAY_MS = 2_147_483_647  # the column's range, about 24.8 days
MAX_MULTIPLIER = 100.0
MAX_ATTEMPTS = 100
MAX_SPAN_MS = 365 * 24 * 3600 * 1000  # one year: the longest cap or expiration, and the longest delay
# The circuit breaker's settings (subscriptions/breaker_rules.py).
MAX_BREAKER_THRESHOLD = 10_000
MIN_BREAKER_WINDOW_S, MAX_BREAKER_WINDOW_S = 1, 24 * 3600
MIN_PROBE_DELAY_MS, MAX_PROBE_DELAY_MS = 100, 10 * 60 * 1000
MIN_DISABLE_AFTER_S, MAX_DISABLE_AFTER_S = 1, 365 * 24 * 3600
# How long settled messages stay in PostgreSQL (DOVECOTE_RETENTION has the same bounds: dovecote/settings.py).
MIN_RETENTION_MS, MAX_RETENTION_MS = 3600 * 1000, 3650 * 24 * 3600 * 1000  # one hour .. ten years


def cap_below_delay(delay_ms: int | None, cap_ms: int | None) -> bool:
    """Say whether a cap is set below the delay it caps: a backoff that could never grow is a mistake, not a setting."""
    return delay_ms is not None and cap_ms is not None and cap_ms < delay_ms


def event_type_quota_problem(room: Room) -> str:
    """Say why no event type can be added to `room` (empty when one can): the per-room quota."""
    limit = settings.DOVECOTE_MAX_EVENT_TYPES_PER_ROOM
    if room.event_types.count() >= limit:
        return (f"room {room.pk} already has {limit} event types, the most a room may have "
                f"(DOVECOTE_MAX_EVENT_TYPES_PER_ROOM); delete one first")
    return ""
