"""Heartbeats of the Celery worker and beat, kept in the shared cache, read by /healthz/ready and the dashboard.

A worker writes one every HEARTBEAT_EVERY_S from a thread started when it starts (`worker_init`)
and stopped when it shuts down; beat writes one from its scheduler's tick, so a beat that stopped
scheduling stops beating even if its process lives on. Each role keeps one key: the newest
heartbeat of any worker (or beat) is the one read. With its heartbeat, a worker checks its file
descriptors (`FdHeadroom`): while fewer than DOVECOTE_WORKER_MIN_FREE_FDS are left, or no socket
can be opened, it says so under SOCKETS_KEY, and clears that once it has room again. The cache
must be shared by every process (Redis, as the rate limits need it anyway: DOVECOTE_CACHE_URL);
in embedded mode all run in one.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from celery import beat as celery_beat
from celery import signals
from django.conf import settings
from django.core.cache import cache

log = logging.getLogger("dovecote.heartbeats")

HEARTBEAT_EVERY_S = 1.0
ROLES = ("worker", "beat")
KEY = "dovecote:heartbeat:{role}"
KEEP_S = 24 * 3600  # a heartbeat older than this is forgotten: the dashboard then says "never"


def record(role: str, name: str, now: float | None = None) -> None:
    """Say that `name`, a process of `role`, is alive now; a cache that does not answer is logged, not raised."""
    try:
        cache.set(KEY.format(role=role), {"at": time.time() if now is None else now, "name": name}, KEEP_S)
    except Exception:  # the health check reports the cache's state; a heartbeat must not crash the worker
        log.warning("could not record the %s heartbeat", role, exc_info=True)


def last_seen(role: str) -> dict[str, Any] | None:
    """The newest heartbeat of `role`: {"at": epoch seconds, "name": …}, or None if none is kept."""
    value = cache.get(KEY.format(role=role))
    return value if isinstance(value, dict) and isinstance(value.get("at"), int | float) else None


def age_s(role: str, now: float | None = None) -> float | None:
    """Seconds since the newest heartbeat of `role`, or None if there is none."""
    seen = last_seen(role)
    return None if seen is None else max(0.0, (time.time() if now is None else now) - seen["at"])


SOCKETS_KEY = "dovecote:heartbeat:worker-sockets"  # the last worker that found itself without socket headroom


@dataclass(frozen=True)
class FdHeadroom:
    """This process's file descriptors: how many are open, its soft limit, and whether a socket could be opened."""

    open: int | None  # None where /proc/self/fd cannot be read
    limit: int | None  # None: no limit
    socket_ok: bool

    @classmethod
    def now(cls) -> FdHeadroom:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        try:
            probe = socket.socket()
        except OSError:
            socket_ok = False
        else:
            probe.close()
            socket_ok = True
        try:
            open_fds: int | None = len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
        except OSError:
            open_fds = None if socket_ok else limit
        return cls(open_fds, None if limit == resource.RLIM_INFINITY else limit, socket_ok)

    def is_short(self, min_free: int) -> bool:
        """Say whether fewer than `min_free` descriptors are left, or no socket could be opened."""
        if not self.socket_ok:
            return True
        return self.open is not None and self.limit is not None and self.limit - self.open < min_free


def record_fd_headroom(name: str, headroom: FdHeadroom, now: float | None = None) -> None:
    """Keep the worker's own report of having no socket headroom (readiness reads it), or clear it once it has some."""
    try:
        if headroom.is_short(settings.DOVECOTE_WORKER_MIN_FREE_FDS):
            cache.set(SOCKETS_KEY, {"at": time.time() if now is None else now, "name": name, "open": headroom.open,
                                    "limit": headroom.limit, "socket_ok": headroom.socket_ok}, KEEP_S)
        elif (seen := cache.get(SOCKETS_KEY)) is not None and seen.get("name") == name:
            cache.delete(SOCKETS_KEY)
    except Exception:  # the health check reports the cache's state; a heartbeat must not crash the worker
        log.warning("could not record the worker's file descriptors", exc_info=True)


def short_of_sockets() -> dict[str, Any] | None:
    """The last report of a worker without socket headroom: {"at", "name", "open", "limit", "socket_ok"}, or None."""
    value = cache.get(SOCKETS_KEY)
    return value if isinstance(value, dict) and isinstance(value.get("at"), int | float) else None


class WorkerHeartbeat:
    """A daemon thread recording the worker's heartbeat until stopped."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dovecote-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            record("worker", self.name)
            record_fd_headroom(self.name, FdHeadroom.now())
            self._stopped.wait(HEARTBEAT_EVERY_S)


_worker_heartbeat: WorkerHeartbeat | None = None


@signals.worker_init.connect
def _start_worker_heartbeat(sender: Any = None, **_: Any) -> None:
    global _worker_heartbeat
    if _worker_heartbeat is None:
        _worker_heartbeat = WorkerHeartbeat(getattr(sender, "hostname", None) or socket.gethostname())
        _worker_heartbeat.start()


@signals.worker_shutdown.connect
def _stop_worker_heartbeat(**_: Any) -> None:
    global _worker_heartbeat
    if _worker_heartbeat is not None:
        _worker_heartbeat.stop()
        _worker_heartbeat = None


class HeartbeatScheduler(celery_beat.Scheduler):
    """Celery beat's scheduler, recording beat's heartbeat as it ticks (at most once a HEARTBEAT_EVERY_S),
    and sleeping until the next entry is due."""

    _last_beat = 0.0

    def adjust(self, n: float, drift: float = 0.0) -> float:
        """A wait of `n` seconds as the scheduler keeps it: `n` itself, with no drift (0 for none).

        Celery's own takes 10 ms off every wait (drift -0.010), both the heap's time of an entry and
        the sleep before it, but an entry's `is_due` keeps its exact time. So beat woke 10 ms early,
        found the entry not yet due, and was handed that wait less 10 ms again: a negative sleep,
        which its loop does not sleep at all. It ticked without pause until each entry was due,
        some 470 ticks a second with this project's schedule, about 24 ms of CPU a second.
        """
        return n if n and n > 0 else 0.0

    def tick(self, *args: Any, **kwargs: Any) -> float:
        now = time.monotonic()
        if now - self._last_beat >= HEARTBEAT_EVERY_S:
            self._last_beat = now
            record("beat", socket.gethostname())
        return min(super().tick(*args, **kwargs), HEARTBEAT_EVERY_S)
