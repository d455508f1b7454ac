"""The publish lane: publishes the process can accept at once, answered without Django's request machinery.

`POST /api/v1/rooms/{id}/messages/` (and `…/messages/batch/`) is the busiest request by far, and
most of its CPU went to what every request pays (URL resolution over the whole site, eleven
middleware, DRF's request, negotiation, serializer and renderer), not to publishing. api/wsgi.py puts this lane in front
of Django: it takes a publish only when everything it needs is already known to the process and the
body is plainly valid, and then does exactly what PublishView (BatchPublishView) does
(api/delivery/views.py):

1. the API key, and the room it may use, from the per-process cache the view fills (api/auth.py
   `KNOWN`; verified in the publish's own transaction, delivery.publish.stale_checks); a room the
   cached key names that the process has not read yet, the lane reads once itself;
2. the key's rate limit (the same counter as every other request, dovecote/throttling.py);
3. the body read by the same JSON reader, its fields as PublishSerializer would take them;
4. delivery.publish.publish (publish_many), the same function: the 202 is sent after the commit.

Anything else goes to Django untouched (the body it read is handed on): an unknown key, a room the
cached key is not known to name or that does not exist, a rate limit reached, any field DRF would
change or refuse, an event the room refuses, a key or room changed since the process read them.
Django then answers as it always does, so every error, header and status is the view's own; the lane
has no error of its own. Its 202 carries the headers the view's last 202 carried (security headers,
Vary, CSP: the middleware's). Like the view, it writes the key's last use, once a minute.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from io import BytesIO
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from rest_framework.renderers import JSONRenderer

from api.auth import KNOWN, checked
from delivery.publish import Event, PublishRejected, StaleCache, publish, publish_many
from dovecote import tracing
from dovecote.inputs import BadJson, parse_json
from dovecote.throttling import within_key_rate
from dovecote.web import StartResponse, WsgiApp

PATH = re.compile(r"/api/v1/rooms/([1-9][0-9]{0,18})/messages/(batch/)?")
# PublishSerializer's fields: the longest text each takes (api/delivery/serializers.py).
TEXT_FIELDS = {"event_type": 200, "event_version": 50, "correlation_id": 200, "idempotency_key": 200,
               "ordering_key": 200}
REQUIRED = frozenset({"event_type", "event_version", "payload"})
BATCH_LIMIT = 500  # BatchPublishSerializer's
FIELDS = frozenset({*TEXT_FIELDS, "payload"})
JSON = JSONRenderer()



class PublishLane:
    """A WSGI application: the publishes it can take at once, and `django` for every other request."""

    def __init__(self, django: WsgiApp) -> None:
        self.django = django
        # The headers of the views' last 202 (single, batch), less their length, date and cookies.
        self.headers: dict[bool, list[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    def __call__(self, wsgi_env: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        match = PATH.fullmatch(wsgi_env.get("PATH_INFO", ""))
        if match is None or wsgi_env.get("REQUEST_METHOD") != "POST":
            return self.django(wsgi_env, start_response)
        batch = match.group(2) is not None
        body = read_body(wsgi_env)
        if body is not None:
            wsgi_env["wsgi.input"] = BytesIO(body)  # Django reads it again if the lane passes
            headers = self.headers.get(batch)
            reply = take(wsgi_env, int(match.group(1)), body, batch) if headers is not None else None
            if headers is not None and reply is not None:
                start_response("202 Accepted", [*headers, ("Content-Length", str(len(reply)))])
                return [reply]
        return self.django(wsgi_env, self._keeping_headers(start_response, batch))

    def _keeping_headers(self, start_response: StartResponse, batch: bool) -> StartResponse:
        """Wrap `start_response` to keep the headers of a 202 from the view, for the lane's own."""
        def keep(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            if status.startswith("202"):
                kept = [(name, value) for name, value in headers
                        if name.lower() not in ("content-length", "set-cookie", "date")]
                with self._lock:
                    self.headers[batch] = kept
            return start_response(status, headers, *rest)
        return keep


def read_body(wsgi_env: dict[str, Any]) -> bytes | None:
    """The body of a JSON request within the size limit, as the view would accept it; None: leave it to Django."""
    media_type = wsgi_env.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
    accept = wsgi_env.get("HTTP_ACCEPT", "*/*").strip()
    if media_type != "application/json" or accept not in ("*/*", "application/json", ""):
        return None  # DRF would negotiate: another renderer, or a 415
    try:
        length = int(wsgi_env.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    if not 0 < length <= settings.DOVECOTE_MAX_BODY_BYTES or not secure_enough(wsgi_env):
        return None
    body = wsgi_env["wsgi.input"].read(length)
    return body if len(body) == length else None


def secure_enough(wsgi_env: dict[str, Any]) -> bool:
    """Say whether Django would serve this request rather than redirect it to HTTPS (SECURE_SSL_REDIRECT)."""
    if not settings.SECURE_SSL_REDIRECT:
        return True
    if settings.SECURE_PROXY_SSL_HEADER:
        header, value = settings.SECURE_PROXY_SSL_HEADER
        return wsgi_env.get(header, "").split(",")[0].strip() == value
    return wsgi_env.get("wsgi.url_scheme") == "https"


def take(wsgi_env: dict[str, Any], room_id: int, body: bytes, batch: bool) -> bytes | None:
    """Publish the events if everything they need is known and plainly valid; return the 202's body, else None."""
    token = bearer_token(wsgi_env)
    key = KNOWN.key(token) if token else None
    if key is None or tracing.enabled():
        return None
    try:
        key.mark_used()  # as the view's authentication does: once a minute, by one request
        room = KNOWN.room_for(key, token, room_id) or KNOWN.read_room(key, token, room_id)
    except DatabaseError:  # the view answers (a 503)
        return None
    items = plain_items(body, batch) if room is not None else None
    if room is None or items is None or not within_key_rate(key.pk):  # counted last: the view counts what it gets
        return None
    header_id = wsgi_env.get("HTTP_X_CORRELATION_ID", "")
    traceparent = tracing.valid_traceparent(wsgi_env.get("HTTP_TRACEPARENT"))
    events = [Event(
        event_type=fields["event_type"], event_version=fields["event_version"], payload=fields["payload"],
        correlation_id=(fields.get("correlation_id") or header_id)[:200], idempotency_key=fields.get("idempotency_key"),
        ordering_key=fields.get("ordering_key", ""), traceparent=traceparent,
    ) for fields in items]
    try:
        if batch:
            published = publish_many(room, events, checked=checked(key, room))
        else:
            published = [publish(room, events[0], checked=checked(key, room))]
    except StaleCache:
        KNOWN.forget(token, room_id)
        return None
    except (PublishRejected, DatabaseError):  # nothing was written: the view answers (a 400, a 503)
        return None
    replies = [one.as_reply() for one in published]
    return JSON.render({"messages": replies} if batch else replies[0])


def bearer_token(wsgi_env: dict[str, Any]) -> str:
    scheme, _, token = wsgi_env.get("HTTP_AUTHORIZATION", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def plain_items(body: bytes, batch: bool) -> list[dict[str, Any]] | None:
    """The events of a body the views would take as they are (None: let them judge it)."""
    try:
        document = parse_json(body)
    except BadJson:
        return None
    if not batch:
        return [document] if plain_fields(document) else None
    if not isinstance(document, dict) or document.keys() != {"messages"}:
        return None
    items = document["messages"]
    if not isinstance(items, list) or not 0 < len(items) <= BATCH_LIMIT or not all(map(plain_fields, items)):
        return None
    return items


def plain_fields(fields: Any) -> bool:
    """Say whether PublishSerializer would take these fields as they are.

    Text fields must be strings it would not trim, nor find blank, too long or holding surrogates.
    """
    if not isinstance(fields, dict) or not REQUIRED <= fields.keys() <= FIELDS or fields["payload"] is None:
        return False
    for name, longest in TEXT_FIELDS.items():
        value = fields.get(name)
        if value is None and name not in REQUIRED:
            if name in fields:
                return False  # null: DRF refuses it
            continue
        if not isinstance(value, str) or not value or len(value) > longest or value != value.strip():
            return False
        try:
            value.encode()
        except UnicodeEncodeError:  # a lone surrogate
            return False
    return True
