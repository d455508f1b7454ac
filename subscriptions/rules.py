"""The rules a subscription's settings follow, written once for the API's serializers and the console's forms.

The push-URL rules are here (which kind takes a URL) and in subscriptions/push_urls.py (which
addresses a URL may reach); the delivery overrides follow the room's bounds (rooms/rules.py); a
payload filter follows subscriptions/filters.py (`filter_problems`, which names each fault by its path);
a push subscription's max_in_flight × timeout_ms is bounded (`in_flight_seconds_problem`).
Each caller words the message for its own readers: the API names JSON fields, the console its labels.
"""

from __future__ import annotations

import enum

from django.conf import settings

from rooms.models import Room
from subscriptions.models import Subscription
from subscriptions.push_urls import UnsafePushUrl, check_push_url

MAX_IN_FLIGHT = 1000
MAX_PER_SECOND = 10_000
MIN_TIMEOUT_MS, MAX_TIMEOUT_MS = 100, 300_000
MAX_FILTERS = 100
MAX_SECRET_OVERLAP_SECONDS = 7 * 24 * 3600  # a rotation's overlap window, at most


class PushUrlProblem(enum.Enum):
    MISSING = "a push subscription needs a push URL"
    NOT_TAKEN = "a pull subscription takes no push URL"
    UNSAFE = "the push URL is refused"


class PushUrlRefused(ValueError):
    """A push URL that does not suit the subscription; `problem` says which rule, `reason` why (for UNSAFE)."""

    def __init__(self, problem: PushUrlProblem, reason: str = "") -> None:
        super().__init__(reason or problem.value)
        self.problem = problem
        self.reason = reason or problem.value


def check_push_url_of(kind: str, url: str, *, check_address: bool = True) -> None:
    """Raise PushUrlRefused unless `url` suits a subscription of `kind`.

    Push needs a URL, pull takes none; with `check_address`, a push URL must be http(s) and reach
    only addresses a push may reach (subscriptions/push_urls.py).
    """
    if kind == Subscription.Type.PUSH and not url:
        raise PushUrlRefused(PushUrlProblem.MISSING)
    if kind == Subscription.Type.PULL and url:
        raise PushUrlRefused(PushUrlProblem.NOT_TAKEN)
    if kind == Subscription.Type.PUSH and check_address:
        try:
            check_push_url(url)
        except UnsafePushUrl as refused:
            raise PushUrlRefused(PushUrlProblem.UNSAFE, refused.reason) from None


def in_flight_seconds_problem(kind: str, max_in_flight: int | None, timeout_ms: int | None) -> str:
    """Say why a push subscription's POSTs could hold sockets too long (empty when they cannot).

    max_in_flight POSTs, each up to timeout_ms, hold up to max_in_flight × timeout_ms of socket time:
    at most DOVECOTE_MAX_IN_FLIGHT_SECONDS. Each field's own limits are checked by its field.
    """
    if kind != Subscription.Type.PUSH or max_in_flight is None or timeout_ms is None:
        return ""
    limit = settings.DOVECOTE_MAX_IN_FLIGHT_SECONDS
    seconds = max_in_flight * timeout_ms / 1000
    if seconds <= limit:
        return ""
    return (f"max_in_flight × timeout_ms is {max_in_flight} × {timeout_ms} ms = {seconds:g} in-flight seconds; "
            f"at most {limit} (DOVECOTE_MAX_IN_FLIGHT_SECONDS): lower max_in_flight or timeout_ms")


def name_taken(room: Room, name: str, *, excluding: int | None = None) -> bool:
    """Say whether another subscription of `room` (not `excluding`) already has `name`: names are unique per room."""
    others = Subscription.objects.filter(room=room, name=name)
    if excluding is not None:
        others = others.exclude(pk=excluding)
    return others.exists()


def quota_problem(room: Room) -> str:
    """Say why no subscription can be added to `room` (empty when one can): the per-room quota."""
    limit = settings.DOVECOTE_MAX_SUBSCRIPTIONS_PER_ROOM
    if Subscription.objects.filter(room=room).count() >= limit:
        return (f"room {room.pk} already has {limit} subscriptions, the most a room may have "
                f"(DOVECOTE_MAX_SUBSCRIPTIONS_PER_ROOM); delete one first")
    return ""
