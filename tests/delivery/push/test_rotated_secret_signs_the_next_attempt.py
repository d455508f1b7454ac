"""A rotated signing secret signs the very next attempt, even on a worker whose push session is already running.

A session holds its subscription in memory and its engine rereads it only every second; each claim
reads the subscription's secret version, so an attempt claimed after a rotation is signed with the
new secret at once (verified with the standardwebhooks library, as the receiver kit does).
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from rooms.models import ApiKey
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver
from tests.workers import WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)


def publish(client: Client, key: str, room_id: int, n: int) -> str:
    body = {"event_type": "order.created", "event_version": "1", "payload": {"n": n}}
    response = call_api(client, "post", f"/api/v1/rooms/{room_id}/messages/", body, key)
    assert response.status_code == 202, response.content
    return response.json()["message_id"]


def test_the_first_push_after_a_rotation_carries_the_new_secrets_signature(client: Client, receiver: Receiver,
                                                                           worker: WorkerProcess) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/rotating"))
    secret = subscription.signing_secret
    publish(client, key, room.pk, 0)  # the session starts, holding the first secret
    assert len(receiver.wait_for("/rotating", 1, timeout=60)) == 1, worker.tail()

    for n in range(1, 4):  # the engine's reread every second would make one lucky round pass without the fix
        old = secret
        rotated = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/rotate-secret/",
                           {"overlap_seconds": 0}, key)
        assert rotated.status_code == 200, rotated.content
        secret = rotated.json()["signing_secret"]
        message_id = publish(client, key, room.pk, n)

        requests = receiver.wait_for("/rotating", n + 1, timeout=60)
        assert len(requests) == n + 1, worker.tail()
        request = requests[n]
        headers = {name.lower(): value for name, value in request.headers.items()}
        assert (headers["webhook-id"], json.loads(request.body)["data"]) == (message_id, {"n": n})
        assert headers["x-delivery-attempt"] == "1"
        Webhook(secret).verify(request.body, headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(old).verify(request.body, headers)
