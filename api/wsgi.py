"""The web process's WSGI application (bin/web): the publish lane (api/publish_lane.py) in front of Django's."""

# ruff: noqa: I001 - Django is set up (dovecote.wsgi) before any module with models is imported
from __future__ import annotations

from dovecote.wsgi import application as django_application
from api.publish_lane import PublishLane

application = PublishLane(django_application)
