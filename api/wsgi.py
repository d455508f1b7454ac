"""The web process's WSGI application (bin/web): the publish lane (api/publish_lane.py) in front of Django's."""

from __future__ import annotations

from api.publish_lane import PublishLane
from dovecote.wsgi import application as django_application

application = PublishLane(django_application)
