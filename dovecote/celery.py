"""The Celery app: settings under the CELERY_ namespace, tasks found in each app's tasks.py."""

from __future__ import annotations

import os

from celery import Celery

import dovecote.heartbeats  # noqa: F401 - a worker's heartbeat starts with it (worker_init)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dovecote.settings")

app = Celery("dovecote")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
