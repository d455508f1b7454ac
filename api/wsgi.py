"""The web process's WSGI application (bin/web): the publish lane (api/publish_lane.py) in front of Django's."""

# ruff: noqa: I001 - Django is set up (dovecote.wsgi) before any module with models is imported
from __future__ import annotations

from dovecote.wsgi import application as django_application
from api.publish_lane import PublishLane
from dovecote.web import route_stop_signals

application = PublishLane(django_application)


def worker_application() -> PublishLane:
    """The application of one bin/web worker: granian calls this in the worker before it starts serving."""
    route_stop_signals()  # before granian starts its threads, so that they inherit the blocked signals
    return application
