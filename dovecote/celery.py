"""The Celery app: settings under the CELERY_ namespace, tasks found in each app's tasks.py."""

from __future__ import annotations

import logging
import os
import sys
from typing import IO, Any

import celery.apps.worker
from celery import Celery
from celery.signals import beat_init, celeryd_init, task_postrun, task_prerun, worker_ready
from django import db
from django.conf import settings

import dovecote.heartbeats  # noqa: F401 - a worker's heartbeat starts with it (worker_init)
from dovecote import heap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dovecote.settings")

app = Celery("dovecote")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def close_old_connections(**_: object) -> None:
    """Treat a task as Django treats a request: drop this thread's connections past CONN_MAX_AGE or broken.

    Celery's own closing of every connection around every task is off (CELERY_DB_REUSE_MAX), so a
    beat tick reuses the connection its thread made, health-checked (CONN_HEALTH_CHECKS) first.
    """
    db.close_old_connections()


@celeryd_init.connect
def log_in_dovecotes_format(**_: object) -> None:
    """Configure logging as soon as a worker starts: Celery warns (running as root) before Django sets it up."""
    from dovecote.logformat import configure  # noqa: PLC0415 - reads the settings, which are ready only now

    configure(settings.LOGGING)


def say_as_a_record(message: str, file: IO[Any] = sys.__stderr__) -> None:  # type: ignore[assignment]
    """Write a notice Celery would print bare (`worker: Warm shutdown`) as one record in Dovecote's format."""
    handlers = logging.getLogger().handlers
    if not handlers:
        return _celery_say(message, file)
    record = logging.LogRecord("celery.apps.worker", logging.INFO, __file__, 0, message.strip(), None, None)
    os.write(file.fileno(), (handlers[0].format(record) + "\n").encode())  # from a signal handler: no lock


@worker_ready.connect
@beat_init.connect
def freeze_startup_objects(**_: object) -> None:
    """Once a worker or beat has started, keep what it made out of the garbage collector's walks (dovecote/heap.py)."""
    heap.freeze_startup_objects()


# Celery writes its shutdown notices with safe_say from its signal handlers, past logging.
_celery_say = celery.apps.worker.safe_say  # type: ignore[attr-defined]
celery.apps.worker.safe_say = say_as_a_record  # type: ignore[attr-defined]
