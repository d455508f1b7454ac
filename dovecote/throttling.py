"""Rate limits: `DOVECOTE_API_RATE` requests per API key, and failed sign-ins per client address.

Both count in the shared cache (Redis when there is one), in fixed windows.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
import uuid
import weakref
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
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
        allowed, self.seconds_left = count_against_rate(self.client_id(request), self.clock())
        return allowed

    def wait(self) -> float:
        # At least 1 s: DRF leaves Retry-After out when the wait rounds to 0.
        return max(1, math.ceil(self.seconds_left))

    def client_id(self, request: Request) -> str:
        if request.auth is not None:  # an ApiKey (api.auth)
            return f"key-{request.auth.pk}"
        return f"address-{client_address(request)}"


def count_against_rate(client_id: str, now: float) -> tuple[bool, float]:
    """Count one request of `client_id` in its window of DOVECOTE_API_RATE: (within the limit?, seconds left).

    An unreachable cache lets the request through: it must not take the whole API down with it.
    """
    limit, period = parse_rate(settings.DOVECOTE_API_RATE)
    window = int(now // period)
    seconds_left = (window + 1) * period - now
    if LEASES.spend(client_id, window):
        return True, seconds_left
    key = f"throttle:{client_id}:{period}:{window}"
    wanted = LEASES.size(client_id, window, limit) if _redis_client(key) is not None else 1
    try:
        count = _count_request(key, period, wanted)
    except Exception:
        log.warning("rate limit not applied: the cache is unreachable", exc_info=True)
        return True, 0.0
    granted = min(wanted, limit - (count - wanted))  # the reserved requests that fall within the limit
    LEASES.keep(client_id, window, granted - 1, wanted)
    return granted > 0, seconds_left


def within_key_rate(key_id: int) -> bool:
    """Count one request of API key `key_id`, as ApiKeyRateThrottle does; False when it is over the limit."""
    return count_against_rate(f"key-{key_id}", ApiKeyRateThrottle.clock())[0]


class Leases:
    """Requests this process reserved in a client's current window and has not used yet.

    A busy client would cost a round trip to Redis per request. Instead the process reserves
    requests of the window in advance (INCRBY) and spends them locally: one, then twice as many each
    time a reservation runs out in the same window, up to a hundredth of the limit (at most
    LEASE_MAX). A limit under 200 a window is counted request by request, as before. What a process
    reserved and did not use by the window's end is counted as used: with W web processes a client
    may be refused up to W × (limit / 100) requests early, never let past the limit.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[int, int, int]] = {}  # client -> (window, requests left, last reservation)

    def spend(self, client_id: str, window: int) -> bool:
        """Use one reserved request of the window; False when none is left (count in Redis)."""
        with self._lock:
            held = self._held.get(client_id)
            if held is None or held[0] != window or held[1] <= 0:
                return False
            self._held[client_id] = (window, held[1] - 1, held[2])
            return True

    def size(self, client_id: str, window: int, limit: int) -> int:
        """How many requests to reserve next: double the last reservation of this window, within the bounds."""
        cap = min(LEASE_MAX, limit // 100)
        with self._lock:
            held = self._held.get(client_id)
        last = held[2] if held is not None and held[0] == window else 0
        return max(1, min(cap, 2 * last))

    def keep(self, client_id: str, window: int, left: int, reserved: int) -> None:
        with self._lock:
            if len(self._held) >= LEASE_CLIENTS:
                self._held.clear()  # many clients at once: forget the leftovers (counted as used)
            self._held[client_id] = (window, max(0, left), reserved if left >= 0 else 0)


LEASE_MAX = 64
LEASE_CLIENTS = 10_000  # clients whose reservations a process remembers at once
LEASES = Leases()


def _count_request(key: str, period: int, requests: int = 1) -> int:
    """Add `requests` to the counter `key` (made to outlive its window) and return the new count.

    On Redis this is one round trip (INCRBY, and EXPIRE when the key has no expiry yet); the cache
    API would take three (SET NX, then EXISTS and INCR) on every request. Another cache (one process:
    the embedded demo) counts one at a time.
    """
    if (redis := _redis_client(key)) is not None:
        full_key = cache.make_and_validate_key(key)
        pipe = redis.pipeline(transaction=False)
        pipe.incrby(full_key, requests)
        pipe.expire(full_key, period + 1, nx=True)
        count, _ = pipe.execute()
        return int(count)
    if cache.add(key, 1, timeout=period + 1):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # it expired between the two calls: this request opens a new count
        cache.add(key, 1, timeout=period + 1)
        return 1


# One redis-py client per cache backend (Django keeps one backend per thread). Django's cache API
# builds a new client object on every call, which was ~5 % of an API request's CPU in the bench's
# profile (make bench PROFILE=1); a client is thread-safe and draws on the backend's connection pool.
_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _redis_client(key: str) -> Any:
    """The redis-py client behind Django's Redis cache, or None when the cache is another kind."""
    backend: Any = getattr(cache, "_cache", None)
    if not hasattr(backend, "get_client"):
        return None
    client = _clients.get(backend)
    if client is None:
        client = _clients[backend] = backend.get_client(key, write=True)
    return client


def client_address(request: HttpRequest) -> str:
    """Return the caller's IP address: REMOTE_ADDR, or the entry X-Forwarded-For got from the first trusted proxy.

    Only the last DOVECOTE_TRUSTED_PROXIES entries of X-Forwarded-For were written by proxies of ours;
    anything before them is whatever the client sent, so it is never read.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.DOVECOTE_TRUSTED_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if not proxies or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",")[-proxies:]]
    return hops[0][:64] or remote


class FailureLimit:
    """Count failed sign-ins (passwords, API keys) per client address in fixed windows; over the limit, refuse.

    While an address is over its limit even a right password or key is refused, so guessing on
    cannot tell a right answer from a wrong one. The counters live in the shared cache.
    """

    clock = staticmethod(time.time)  # tests replace it to cross a window boundary without sleeping

    def __init__(self, name: str, setting: str) -> None:
        self.name = name
        self.setting = setting

    def seconds_blocked(self, request: HttpRequest, account: str = "") -> int:
        """Return how long this address (for `account`, when given) must wait before trying again (0: now)."""
        limit, period, window, now = self._window()
        key = self._key(request, period, window, account)
        try:
            if (redis := _redis_client(key)) is not None:  # the count _count_request keeps: a plain integer
                failures = int(redis.get(cache.make_and_validate_key(key)) or 0)
            else:
                failures = cache.get(key, 0)
        except Exception:  # an unreachable cache must not lock everyone out
            log.warning("%s failure limit not applied: the cache is unreachable", self.name, exc_info=True)
            return 0
        return max(1, math.ceil((window + 1) * period - now)) if failures >= limit else 0

    def record_failure(self, request: HttpRequest, account: str = "") -> None:
        _, period, window, _ = self._window()
        try:
            _count_request(self._key(request, period, window, account), period)
        except Exception:
            log.warning("%s failure not counted: the cache is unreachable", self.name, exc_info=True)

    def _window(self) -> tuple[int, int, int, float]:
        limit, period = parse_rate(getattr(settings, self.setting))
        now = self.clock()
        return limit, period, int(now // period), now

    def _key(self, request: HttpRequest, period: int, window: int, account: str) -> str:
        account = hashlib.sha256(account.casefold().encode()).hexdigest()[:16] if account else ""
        return f"failures:{self.name}:{client_address(request)}:{account}:{period}:{window}"


LOGIN_FAILURES = FailureLimit("login", "DOVECOTE_LOGIN_FAILURE_RATE")
API_KEY_FAILURES = FailureLimit("api-key", "DOVECOTE_API_KEY_FAILURE_RATE")


# Take a slot of KEYS[1] (a sorted set of holders scored by when their lease ends) unless ARGV[3] live
# holders have one: ARGV[1] now (ms), ARGV[2] the lease's end (ms), ARGV[4] this holder, ARGV[5] the
# set's own expiry (ms). Leases that ended (their process died holding them) are dropped first.
_TAKE_SLOT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""


class SlotsUnshared(Exception):
    """The cache is not Redis, or is unreachable: the caller counts in its own process instead."""


def take_shared_slot(name: str, limit: int, lease_s: float) -> str | None:
    """Take one of `limit` slots of `name` across every process on the shared Redis, for at most `lease_s`.

    Returns the holder's token (give it to `release_shared_slot`), or None when all are taken.
    Raises SlotsUnshared when there is no Redis to count in. One round trip (a Lua script).
    """
    key = f"slots:{name}"
    if (redis := _redis_client(key)) is None:
        raise SlotsUnshared("the cache is not Redis")
    token = uuid.uuid4().hex
    now_ms = int(time.time() * 1000)
    lease_ms = int(lease_s * 1000)
    try:
        taken = redis.eval(_TAKE_SLOT, 1, cache.make_and_validate_key(key), now_ms, now_ms + lease_ms, limit,
                           token, lease_ms + 1000)
    except Exception as error:
        raise SlotsUnshared(f"the cache is unreachable: {error}") from error
    return token if taken else None


def release_shared_slot(name: str, token: str) -> None:
    """Give back a slot `take_shared_slot` returned (its lease would end it anyway)."""
    key = f"slots:{name}"
    try:
        if (redis := _redis_client(key)) is not None:
            redis.zrem(cache.make_and_validate_key(key), token)
    except Exception:
        log.warning("slot of %s not released: the cache is unreachable; its lease ends it", name, exc_info=True)
