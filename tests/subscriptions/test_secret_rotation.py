"""Signing-secret rotation with an overlap: each push verifies with the old secret and with the new one."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.test import Client
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from delivery.transports import PushRequest
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver

OLD, NEW = "whsec_" + "A" * 44, "whsec_" + "B" * 44


def headers_of(request: PushRequest) -> dict[str, str]:
    return {name.lower(): value for name, value in request.headers(int(time.time())).items()}


def test_during_an_overlap_a_push_carries_two_signatures_either_secret_verifies() -> None:
    request = PushRequest(url="http://hooks.example/in", body=b'{"a": 1}', message_id="msg_1", correlation_id="c",
                          attempt=1, signing_secret=NEW, previous_secret=OLD, timeout_ms=1000)
    headers = headers_of(request)

    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (OLD, NEW):
        Webhook(secret).verify(request.body, headers)


def test_without_an_overlap_only_the_current_secret_verifies() -> None:
    request = PushRequest(url="http://hooks.example/in", body=b'{"a": 1}', message_id="msg_1", correlation_id="c",
                          attempt=1, signing_secret=NEW, timeout_ms=1000)
    headers = headers_of(request)

    Webhook(NEW).verify(request.body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(OLD).verify(request.body, headers)


@pytest.mark.django_db
def test_the_overlap_ends_when_its_window_runs_out() -> None:
    subscription = make_subscription(make_room())
    old = subscription.signing_secret
    new = subscription.rotate_signing_secret(timedelta(hours=1))
    until = subscription.previous_secret_until
    assert until is not None

    assert subscription.signing_secrets(until - timedelta(seconds=1)) == (new, old)
    assert subscription.signing_secrets(until) == (new,)
    assert subscription.old_secret_until(until) is None


@pytest.mark.django_db
def test_rotating_during_an_overlap_drops_the_oldest_secret() -> None:
    subscription = make_subscription(make_room())
    first = subscription.signing_secret
    second = subscription.rotate_signing_secret()
    third = subscription.rotate_signing_secret()
    subscription.refresh_from_db()
    assert subscription.signing_secrets() == (third, second) and first not in subscription.signing_secrets()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("worker")
def test_the_worker_signs_every_push_with_both_secrets_during_the_overlap(client: Client, receiver: Receiver) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/rotating"))
    old = subscription.signing_secret
    new = subscription.rotate_signing_secret(timedelta(hours=24))

    for n in range(3):
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                               json.dumps({"event_type": "order.created", "event_version": "1", "payload": {"n": n}}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content
    requests = receiver.wait_for("/rotating", 3)

    assert len(requests) == 3
    for request in requests:
        headers = {name.lower(): value for name, value in request.headers.items()}
        assert len(headers["webhook-signature"].split(" ")) == 2
        assert Webhook(old).verify(request.body, headers) == Webhook(new).verify(request.body, headers)
