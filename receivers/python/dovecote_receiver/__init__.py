"""Receive Dovecote's pushes: verify them (Standard Webhooks), handle each once (a transactional inbox),
and answer with the status that tells Dovecote what to do next.

- `make_wsgi_app` / `make_asgi_app`: framework-free apps over any DB-API connection.
- `dovecote_receiver.django`: a view decorator and the inbox model, for Django projects.
- `Verifier`, `sign`: the signatures alone; `Unsubscribe`, `SlowDown`: what a handler may raise.
"""

from __future__ import annotations

from dovecote_receiver.asgi import make_asgi_app
from dovecote_receiver.core import Reply, receive
from dovecote_receiver.inbox import Inbox
from dovecote_receiver.outcomes import SlowDown, Unsubscribe
from dovecote_receiver.push import Push
from dovecote_receiver.signature import ForgedPush, MalformedPush, PushRefused, StalePush, Verifier, sign
from dovecote_receiver.wsgi import make_wsgi_app

__all__ = ["ForgedPush", "Inbox", "MalformedPush", "Push", "PushRefused", "Reply", "SlowDown", "StalePush",
           "Unsubscribe", "Verifier", "make_asgi_app", "make_wsgi_app", "receive", "sign"]
