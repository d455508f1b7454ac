"""Rate limiting of the REST API: `DOVECOTE_API_RATE` requests per API key, counted in the shared cache."""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from dovecote.env import parse_rate

if TYPE_CHECKING:  # rest_framework.views imports this module while it defines APIView
    from rest_framework.request import Request
    from rest_framework.views import APIView

log = logging.getLogger("dovecote.throttling")


class ApiKeyRateThrottle(BaseThrottle):
    """Count requests per key in fixed windows of the rate's period; over the limit wait for the next window.

    A fixed window costs one atomic increment per request in Redis, where DRF's sliding window
    rewrites a list of every timestamp (6000 of them at the default rate) on each request.
    The price is that a client may spend two windows' worth across a window boundary.
    """

    clock = staticmethod(time.time)  # tests replace it to cross a window boundary without sleeping

    def __init__(self) -> None:
        self.seconds_left = 0.0

    def allow_request(self, request: Request, view: APIView) -> bool:
        limit, period = parse_rate(settings.DOVECOTE_API_RATE)
        now = self.clock()
        window = int(now // period)
        try:
            count = _count_request(f"throttle:{self.client_id(request)}:{period}:{window}", period)
        except Exception:  # an unreachable cache must not take the whole API down with it
            log.warning("rate limit not applied: the cache is unreachable", exc_info=True)
            return True
        self.seconds_left = (window + 1) * period - now
        return count <= limit

    def wait(self) -> float:
        # At least 1 s: DRF leaves Retry-After out when the wait rounds to 0.
        return max(1, math.ceil(self.seconds_left))

    def client_id(self, request: Request) -> str:
        if request.auth is not None:  # an ApiKey (rooms.auth)
            return f"key-{request.auth.pk}"
        return f"address-{self.get_ident(request)}"


def _count_request(key: str, period: int) -> int:
    """Add one to the counter `key` (made to outlive its window) and return the new count."""
    if cache.add(key, 1, timeout=period + 1):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # it expired between the two calls: this request opens a new count
        cache.add(key, 1, timeout=period + 1)
        return 1
