"""A receiver's HTML error page is stored as its words, bounded: never the whole page on an attempt, a delivery
or a subscription."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from delivery.models import Delivery, DeliveryAttempt
from dovecote.error_text import ERROR_CHARS
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]

APACHE_503 = ("<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>503 Service Unavailable"
              "</title>\n<style>body { font-family: sans-serif; }</style>\n</head><body>\n"
              "<h1>Service Unavailable</h1>\n"
              "<p>The server is temporarily unable to service your\nrequest due to maintenance downtime or capacity\n"
              "problems. Please try again later.</p>\n<hr>\n" + "".join(f"<p>detail {n}</p>\n" for n in range(200)) +
              "<address>Apache/2.4.62 (Debian) Server at crm.example.com Port 443</address>\n</body></html>\n")


def wait_for(what: str, read, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := read():
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def test_an_html_error_page_is_stored_as_its_text_within_the_bound(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_attempts=0)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    path = receiver.script("/down", lambda n: Reply(503, {"Content-Type": "text/html"}, body=APACHE_503.encode()))
    subscription = make_subscription(room, push_url=path)

    response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                           json.dumps({"event_type": "order.created", "event_version": "1", "payload": {}}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202, response.content

    delivery = wait_for("the dead letter", lambda: Delivery.objects.filter(
        subscription=subscription, status="dead_lettered").first())
    attempt = DeliveryAttempt.objects.get(delivery=delivery)
    last_error = wait_for("the subscription's last error",
                          lambda: Subscription.objects.get(pk=subscription.pk).last_error)
    for stored in (attempt.error, last_error, delivery.last_error):
        assert "<" not in stored and "DOCTYPE" not in stored and "font-family" not in stored, stored
        assert "Service Unavailable · The server is temporarily unable to service your request" in stored, stored
    assert attempt.error.startswith("HTTP 503: Service Unavailable · ") and attempt.error.endswith("…")
    assert len(attempt.error) <= ERROR_CHARS
    assert len(last_error) <= ERROR_CHARS
    assert delivery.last_error == f"gave up after 1 attempt: {attempt.error}"
