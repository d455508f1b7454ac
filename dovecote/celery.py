"""The Celery app: settings under the CELERY_ namespace, tasks found in each app's tasks.py."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun
from django import db

import dovecote.heartbeats  # noqa: F401 - a worker's heartbeat starts with it (worker_init)

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
