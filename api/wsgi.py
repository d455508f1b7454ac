"""The web process's WSGI application (bin/web): the publish lane (api/publish_lane.py) in front of Django's."""

# ruff: noqa: I001 - Django is set up (dovecote.wsgi) before any module with models is imported
from __future__ import annotations

from dovecote.wsgi import application as django_application
from api.publish_lane import PublishLane
from django.urls import get_resolver
from dovecote.heap import freeze_startup_objects
from dovecote.logformat import write_from_one_thread
from dovecote.web import WsgiApp, route_stop_signals, with_access_log

application = PublishLane(django_application)


def worker_application() -> WsgiApp:
    """The application of one bin/web worker, with its access log: granian calls this in the worker before it serves."""
    route_stop_signals()  # before granian starts its threads, so that they inherit the blocked signals
    write_from_one_thread()  # its request threads' log records (dovecote/logformat.py)
    get_resolver().url_patterns  # noqa: B018 - the URL conf and every view, imported now rather than by a request
    freeze_startup_objects()  # out of the garbage collector's full collections (dovecote/heap.py)
    return with_access_log(application)
