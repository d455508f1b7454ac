"""Embedded mode: the Celery worker and beat inside the web process (SQLite, in-memory broker).

`make demo` uses this so that one process runs everything with the production code paths;
only the database and broker implementations differ.
"""

from __future__ import annotations

import threading

from celery import Celery
from celery.beat import EmbeddedService
from celery.worker import WorkController


def start_worker(app: Celery, *, concurrency: int = 16) -> WorkController:
    """Run a Celery worker with a thread pool in a background thread of this process."""
    worker = app.WorkController(
        pool_cls="threads", concurrency=concurrency, loglevel="WARNING",
        without_heartbeat=True, without_mingle=True, without_gossip=True,
    )
    threading.Thread(target=worker.start, name="celery-worker", daemon=True).start()
    return worker


def start_beat(app: Celery) -> EmbeddedService:
    """Run Celery beat in a background thread of this process."""
    beat = beat_service(app)
    beat.start()
    return beat


def beat_service(app: Celery) -> EmbeddedService:
    """Return Celery beat as a thread (not started) with the configured scheduler, which keeps no file."""
    # Left to itself EmbeddedService ignores `beat_scheduler` and keeps a shelve file in the working dir.
    return EmbeddedService(app, thread=True, scheduler_cls=app.conf.beat_scheduler)
