"""Bound the long polls a web process serves at once, so that waiting pulls cannot take every web thread.

A pull with `wait_ms` > 0 holds its thread until a message comes or the wait ends (up to 20 s).
Each web process serves at most DOVECOTE_LONG_POLLS of them at once, and at most
DOVECOTE_LONG_POLLS_PER_KEY for one API key; a long poll over either limit is answered at once
with 429 and `Retry-After`, and the threads left keep serving everything else (docs/security.md).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from rest_framework import exceptions

RETRY_AFTER_S = 1

_lock = threading.Lock()
_held: Counter[int] = Counter()


@contextmanager
def long_poll_slot(key_id: int) -> Iterator[None]:
    """Hold one of this process's long-poll slots for API key `key_id`, or raise Throttled (429)."""
    with _lock:
        total, mine = sum(_held.values()), _held[key_id]
        if total >= settings.DOVECOTE_LONG_POLLS:
            raise too_many(f"this server already holds {total} long polls, its limit (DOVECOTE_LONG_POLLS)")
        if mine >= settings.DOVECOTE_LONG_POLLS_PER_KEY:
            raise too_many(f"this API key already holds {mine} long polls here, its limit "
                           f"(DOVECOTE_LONG_POLLS_PER_KEY)")
        _held[key_id] += 1
    try:
        yield
    finally:
        with _lock:
            _held[key_id] -= 1
            if not _held[key_id]:
                del _held[key_id]


def too_many(reason: str) -> exceptions.Throttled:
    return exceptions.Throttled(RETRY_AFTER_S, detail=f"{reason}: retry in {RETRY_AFTER_S} s, or pull with wait_ms 0")
