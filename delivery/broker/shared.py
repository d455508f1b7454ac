"""One broker connection per process, for settings.STOMP_URL, opened on first use."""

from __future__ import annotations

import os
import threading

from django.conf import settings

from delivery.broker import Broker, connect

_lock = threading.Lock()
_connection: Broker | None = None
_owner_pid = 0


def shared_broker() -> Broker:
    """Return this process's connection; a forked child or a changed URL gets a new one."""
    global _connection, _owner_pid
    with _lock:
        current = _connection
        if current is not None and _owner_pid == os.getpid() and current.url == settings.STOMP_URL:
            return current
        if current is not None and _owner_pid == os.getpid():
            current.close()
            _connection = None  # if connecting below fails, the next call must not get the closed one
        _connection = connect(
            settings.STOMP_URL,
            receipt_timeout=settings.STOMP_RECEIPT_TIMEOUT_MS / 1000,
            heartbeat_ms=settings.STOMP_HEARTBEAT_MS,
            consumers_per_connection=settings.STOMP_CONSUMERS_PER_CONNECTION,
        )
        _owner_pid = os.getpid()
        return _connection


def close_shared_broker() -> None:
    """Close this process's connection, if any."""
    global _connection
    with _lock:
        if _connection is not None and _owner_pid == os.getpid():
            _connection.close()
        _connection = None
