"""`max_per_second`: POSTs per subscription per second, whichever worker runs its session.

The rule is GCRA (the generic cell rate algorithm, a token bucket kept as one number): a
subscription limited to `limit` a second gets one token every `WINDOW_MS / limit` ms, and may take
up to `batch_size(limit)` at once. The number (the theoretical arrival time of the next token) lives
in Redis (DOVECOTE_CACHE_URL, the Redis of the API's rate counters), so the limit holds across
workers and across a session's hand-over to another worker; a take is one round trip (a Lua script).
A take reserves: it grants tokens now together with the time they may be used (up to AHEAD_MS
ahead), and the session waits until then and POSTs (session.py). So POSTs leave on the schedule
the number in Redis sets, spread evenly over the second, and a slow round trip or a late wake-up
shifts one POST without slowing the ones after it.

Why WINDOW_MS is 1.1 s and the batch at most a 11th of the limit: the tokens granted in any second
are then at most `limit / 1.1 + batch`, which is at most `limit`, with room to spare for the network
or a busy event loop shifting a POST by one interval. The price: a sustained rate about 9 % under
`limit`. Without Redis (embedded mode: one process) the same number is kept in memory.
"""

from __future__ import annotations

import time

from django.conf import settings
from redis.asyncio import Redis

WINDOW_MS = 1100
AHEAD_MS = 1000  # tokens are reserved at most this far ahead
KEY = "dovecote:rate:{subscription_id}"

# KEYS[1]: the theoretical arrival time of the next token (ms). ARGV: limit, wanted, window_ms, batch, ahead_ms.
# Returns {granted, wait_ms}: granted tokens may be used in wait_ms; none granted: ask again in wait_ms.
TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local limit, wanted, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local batch, ahead = tonumber(ARGV[4]), tonumber(ARGV[5])
local interval = window / limit
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local granted = math.min(wanted, batch)
local due = tat + (granted - 1) * interval - (batch - 1) * interval - now
if due > ahead then
  return {0, math.ceil(due - ahead)}
end
tat = tat + granted * interval
redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now + window))
return {granted, math.max(0, math.ceil(due))}
"""


def batch_size(limit: int) -> int:
    """Tokens taken at once at most: an 11th of the limit (see above), at least one."""
    return max(1, limit // 11)


def take_locally(state: dict[int, float], subscription_id: int, limit: int, wanted: int) -> tuple[int, float]:
    """The Lua script's rule on a dict of theoretical arrival times (monotonic seconds)."""
    now = time.monotonic()
    interval, batch = WINDOW_MS / 1000 / limit, batch_size(limit)
    tat = max(state.get(subscription_id, now), now)
    granted = min(wanted, batch)
    due = tat + (granted - batch) * interval - now
    if due > AHEAD_MS / 1000:
        return 0, due - AHEAD_MS / 1000
    state[subscription_id] = tat + granted * interval
    return granted, max(0.0, due)


class RateLimiter:
    """The token source of every session of a worker's engine."""

    def __init__(self, url: str | None = None) -> None:
        url = url if url is not None else settings.DOVECOTE_CACHE_URL
        self._redis = Redis.from_url(url) if url.startswith(("redis://", "rediss://")) else None
        self._script = self._redis.register_script(TAKE) if self._redis is not None else None
        self._local: dict[int, float] = {}

    async def take(self, subscription_id: int, limit: int, wanted: int) -> tuple[int, float]:
        """Reserve up to `wanted` of the subscription's `limit` tokens a second: (granted, seconds until usable).

        None granted: the seconds after which to ask again.
        """
        wanted = min(wanted, batch_size(limit))
        if self._script is None:
            return take_locally(self._local, subscription_id, limit, wanted)
        granted, wait_ms = await self._script(keys=[KEY.format(subscription_id=subscription_id)],
                                              args=[limit, wanted, WINDOW_MS, batch_size(limit), AHEAD_MS])
        return int(granted), int(wait_ms) / 1000

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
