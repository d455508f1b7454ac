"""Bound the long polls served at once, so that waiting pulls cannot take every web thread.

A pull with `wait_ms` > 0 holds its thread until a message comes or the wait ends (up to 20 s).
Two limits, each answered at once with 429 and `Retry-After` when it is reached, while the threads
left keep serving everything else (docs/security.md):

- DOVECOTE_LONG_POLLS per web process: it guards that process's threads, so it is counted there.
- DOVECOTE_LONG_POLLS_PER_KEY per API key across every web process: counted in the shared Redis
  (a slot leased for the wait and a margin, so a process that dies holding one frees it), or in the
  process alone when there is no Redis (the embedded demo: one process) or it cannot be reached.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from rest_framework import exceptions

from dovecote.throttling import SlotsUnshared, release_shared_slot, take_shared_slot

log = logging.getLogger("api.long_polls")
RETRY_AFTER_S = 1
# A key's shared slot outlives the longest wait by this much (the reply's own time), then lapses.
LEASE_MARGIN_S = 30

_lock = threading.Lock()
_held: Counter[int] = Counter()  # this process's long polls by API key id


@contextmanager
def long_poll_slot(key_id: int, wait_ms: int) -> Iterator[None]:
    """Hold a long-poll slot of this process and one of API key `key_id`'s, or raise Throttled (429)."""
    with _process_slot(key_id) as mine, _key_slot(key_id, mine, wait_ms / 1000 + LEASE_MARGIN_S):
        yield


@contextmanager
def _process_slot(key_id: int) -> Iterator[int]:
    """Count this long poll in the process (refusing it over DOVECOTE_LONG_POLLS); yield the key's count before it."""
    with _lock:
        total, mine = sum(_held.values()), _held[key_id]
        if total >= settings.DOVECOTE_LONG_POLLS:
            raise too_many(f"this server already holds {total} long polls, its limit (DOVECOTE_LONG_POLLS)")
        _held[key_id] += 1
    try:
        yield mine
    finally:
        with _lock:
            _held[key_id] -= 1
            if not _held[key_id]:
                del _held[key_id]


@contextmanager
def _key_slot(key_id: int, held_here: int, lease_s: float) -> Iterator[None]:
    """Take one of the key's DOVECOTE_LONG_POLLS_PER_KEY slots across processes (in this one without Redis)."""
    limit = settings.DOVECOTE_LONG_POLLS_PER_KEY
    refusal = (f"this API key already holds {limit} long polls, its limit across the web servers "
               f"(DOVECOTE_LONG_POLLS_PER_KEY)")
    try:
        token = take_shared_slot(f"long-polls:key-{key_id}", limit, lease_s)
    except SlotsUnshared as unshared:
        log.debug("long polls of key %s counted in this process: %s", key_id, unshared)
        if held_here >= limit:
            raise too_many(refusal) from None
        yield
        return
    if token is None:
        raise too_many(refusal)
    try:
        yield
    finally:
        release_shared_slot(f"long-polls:key-{key_id}", token)


def too_many(reason: str) -> exceptions.Throttled:
    return exceptions.Throttled(RETRY_AFTER_S, detail=f"{reason}: retry in {RETRY_AFTER_S} s, or pull with wait_ms 0")
