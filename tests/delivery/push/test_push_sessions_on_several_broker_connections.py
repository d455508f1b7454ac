"""A worker whose push sessions fill more than one STOMP connection delivers and acks every frame on each.

A real worker with STOMP_CONSUMERS_PER_CONNECTION=2 runs seven push sessions, started one after another so that
they spread over three or four connections; then every session gets frames at once, and the engine's records ack
frames of consumers on several connections in one call (StompBroker.ack_together).
Every delivery ends delivered, the broker holds nothing afterwards, and no connection was lost: an ACK written on
a connection that does not hold its frame is answered with ERROR and that connection closed.
"""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from delivery.broker.shared import shared_broker
from delivery.models import Delivery
from rooms.models import ApiKey, Room
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver
from tests.workers import WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)
SUBSCRIPTIONS = 7
MESSAGES = 20


def publish(client: Client, room: Room, key: str, payloads: list[dict[str, object]]) -> None:
    body = {"messages": [{"event_type": "order.created", "event_version": "1", "payload": payload}
                         for payload in payloads]}
    response = client.post(f"/api/v1/rooms/{room.pk}/messages/batch/", json.dumps(body),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202, response.content


def wait_delivered(room: Room, count: int, worker: WorkerProcess, deadline: float) -> None:
    while (done := Delivery.objects.filter(subscription__room=room, status="delivered").count()) < count:
        assert time.monotonic() < deadline, f"{done} of {count} delivered\n{worker.tail()}"
        time.sleep(0.05)


def test_sessions_on_several_connections_deliver_everything_and_leave_nothing_on_the_broker(
        client: Client, receiver: Receiver, start_worker) -> None:
    worker = start_worker("lanes", STOMP_CONSUMERS_PER_CONNECTION="2")
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("lanes", rooms=[room])[1]
    deadline = time.monotonic() + 90
    subscriptions, delivered = [], 0
    for n in range(SUBSCRIPTIONS):  # one session at a time, each after the last one's connection was chosen
        subscriptions.append(make_subscription(room, name=f"s{n}", push_url=receiver.url(f"/s{n}")))
        publish(client, room, key, [{"warm": n}])
        delivered += len(subscriptions)
        wait_delivered(room, delivered, worker, deadline)
    log = worker.log_path.read_text(errors="replace")
    assert "opened connection 3 for consumers" in log, worker.tail()  # seven sessions, two (or three) a connection

    publish(client, room, key, [{"n": n} for n in range(MESSAGES)])  # recorded and acked across the connections
    wait_delivered(room, delivered + SUBSCRIPTIONS * MESSAGES, worker, deadline)

    destinations = {subscription.destination for subscription in subscriptions}
    held: dict[str, int] = {}
    while time.monotonic() < deadline:  # the last ACKs are written just after the records that ack them
        held = {stats.destination: stats.messages for stats in shared_broker().queues(f"room-{room.pk}::")
                if stats.destination in destinations}
        if not any(held.values()):
            break
        time.sleep(0.1)
    assert not any(held.values()), f"frames still on the broker: {held}\n{worker.tail()}"
    for n in range(SUBSCRIPTIONS):  # at least once: a POST that timed out on this loaded receiver is sent again
        bodies = {json.loads(request.body)["data"].get("n") for request in receiver.requests(f"/s{n}")}
        assert bodies - {None} == set(range(MESSAGES)), (n, sorted(bodies - {None}))
    log = worker.log_path.read_text(errors="replace")
    # An ACK written on a connection that does not hold its frame is answered with ERROR, and the connection closed.
    assert "sent ERROR" not in log and "lost the connection" not in log, worker.tail()
