"""Pull with leases (ack, nack, extend, lease expiry) and dead letters (list, replay, purge), end to end."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from django.test import Client

from delivery.models import Delivery, DeliveryAttempt
from rooms.models import ApiKey
from tests.delivery.push.test_push_delivery import publish, wait_for_status
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, always

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]


def call(client: Client, key: str, path: str, body: dict) -> dict:
    response = client.post(path, json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code in (200, 202), response.content
    return response.json()


@pytest.fixture
def setup():
    room = make_room(delivery_delay_ms=200, delivery_delay_multiplier=1, delivery_attempts=2)
    make_event_type(room)
    key = ApiKey.issue("consumer", rooms=[room])[1]
    subscription = make_subscription(room, type="pull", push_url="")
    return room, key, subscription


def pull(client: Client, key: str, subscription_id: int, **options: int) -> list[dict]:
    options.setdefault("wait_ms", 3000)
    return call(client, key, f"/api/v1/subscriptions/{subscription_id}/pull/", options)["messages"]


def test_pulled_messages_are_leased_and_acked_once(client: Client, setup) -> None:
    room, key, subscription = setup
    published = [publish(client, key, room.pk, correlation_id=f"c{i}")["message_id"] for i in range(3)]

    messages = pull(client, key, subscription.pk, max_messages=10)
    while len(messages) < 3:
        messages += pull(client, key, subscription.pk, max_messages=10)

    assert sorted(m["message_id"] for m in messages) == sorted(published)
    assert {m["attempt"] for m in messages} == {1}
    assert all(Delivery.objects.get(message_id=m["message_id"]).status == "leased" for m in messages)
    ack_ids = [m["ack_id"] for m in messages]
    assert call(client, key, f"/api/v1/subscriptions/{subscription.pk}/ack/", {"ack_ids": ack_ids})["done"] == ack_ids
    again = call(client, key, f"/api/v1/subscriptions/{subscription.pk}/ack/", {"ack_ids": ack_ids[:1]})
    assert again["done"] == [] and again["failed"][0]["error"].startswith("unknown, already used")
    assert Delivery.objects.filter(status="acked").count() == 3


def test_a_consumer_that_never_acks_sees_the_message_again_then_in_the_dead_letters(client: Client, setup) -> None:
    room, key, subscription = setup
    message_id = publish(client, key, room.pk)["message_id"]

    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 3 and time.monotonic() < deadline:
        pulled = pull(client, key, subscription.pk, lease_ms=300)
        seen.extend((message["attempt"], time.monotonic()) for message in pulled)
    assert [attempt for attempt, _ in seen] == [1, 2, 3]
    assert all(later - earlier >= 0.45 for (_, earlier), (_, later) in itertools.pairwise(seen))

    delivery = wait_for_status(message_id, subscription.pk, "dead_lettered")
    outcomes = list(DeliveryAttempt.objects.filter(delivery=delivery).values_list("attempt", "outcome"))
    assert outcomes == [(1, "lease_expired"), (2, "lease_expired"), (3, "lease_expired")]
    letters = client.get(f"/api/v1/subscriptions/{subscription.pk}/dead-letters/",
                         HTTP_AUTHORIZATION=f"Bearer {key}").json()["results"]
    assert [d["message_id"] for d in letters] == [message_id]


def test_extend_keeps_a_lease_alive_past_its_first_deadline(client: Client, setup) -> None:
    room, key, subscription = setup
    publish(client, key, room.pk)
    [message] = pull(client, key, subscription.pk, lease_ms=700)
    extended = call(client, key, f"/api/v1/subscriptions/{subscription.pk}/extend/",
                    {"ack_ids": [message["ack_id"]], "lease_ms": 5000})
    assert extended["done"] == [message["ack_id"]]
    time.sleep(2.0)  # past the first deadline, with the lease sweeper running every second
    assert call(client, key, f"/api/v1/subscriptions/{subscription.pk}/ack/",
                {"ack_ids": [message["ack_id"]]})["done"] == [message["ack_id"]]


def test_nack_retry_with_a_delay_and_nack_dead_letter(client: Client, setup) -> None:
    room, key, subscription = setup
    message_id = publish(client, key, room.pk)["message_id"]
    [first] = pull(client, key, subscription.pk)
    call(client, key, f"/api/v1/subscriptions/{subscription.pk}/nack/",
         {"ack_ids": [first["ack_id"]], "action": "retry", "delay_ms": 0})
    [second] = pull(client, key, subscription.pk)
    assert second["message_id"] == message_id and second["attempt"] == 2
    call(client, key, f"/api/v1/subscriptions/{subscription.pk}/nack/",
         {"ack_ids": [second["ack_id"]], "action": "dead_letter"})
    delivery = Delivery.objects.get(message_id=message_id)
    assert delivery.status == "dead_lettered" and delivery.last_error == "dead-lettered by the consumer"


def test_an_ack_id_is_bound_to_its_subscription(client: Client, setup) -> None:
    room, key, subscription = setup
    other = make_subscription(room, type="pull", push_url="")
    publish(client, key, room.pk)
    [message] = pull(client, key, subscription.pk)
    wrong = call(client, key, f"/api/v1/subscriptions/{other.pk}/ack/", {"ack_ids": [message["ack_id"], "junk"]})
    assert wrong["done"] == [] and len(wrong["failed"]) == 2
    assert Delivery.objects.get(message_id=message["message_id"], subscription=subscription).status == "leased"


def test_pull_input_errors(client: Client, setup) -> None:
    room, key, subscription = setup
    push = make_subscription(room)
    path = f"/api/v1/subscriptions/{subscription.pk}/pull/"
    bad = client.post(path, json.dumps({"max_messages": 0, "wait_ms": 20001}), content_type="application/json",
                      HTTP_AUTHORIZATION=f"Bearer {key}")
    assert bad.status_code == 400 and set(bad.json()) == {"max_messages", "wait_ms"}
    assert client.post(f"/api/v1/subscriptions/{push.pk}/pull/", "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 400
    subscription.status = "paused"
    subscription.save()
    assert client.post(path, "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 409
    outsider = ApiKey.issue("outsider", rooms=[make_room()])[1]
    assert client.post(path, "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {outsider}").status_code == 403
    assert client.post("/api/v1/subscriptions/999999999/pull/", "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 404


def test_replaying_a_dead_letter_to_a_healthy_receiver_delivers_it_with_both_lives_in_the_timeline(
    client: Client, receiver: Receiver
) -> None:
    room = make_room(delivery_attempts=1, delivery_delay_ms=100)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    down = {"healthy": False}
    hook = receiver.script("/hook", lambda n: always(204 if down["healthy"] else 500)(n))  # noqa: PLW0108 - reads `down` per request
    subscription = make_subscription(room, push_url=hook)
    message_id = publish(client, key, room.pk)["message_id"]
    wait_for_status(message_id, subscription.pk, "dead_lettered")

    down["healthy"] = True
    replayed = call(client, key, f"/api/v1/subscriptions/{subscription.pk}/dead-letters/replay/",
                    {"message_ids": [message_id]})
    assert replayed["count"] == 1

    delivery = wait_for_status(message_id, subscription.pk, "delivered")
    lives = list(DeliveryAttempt.objects.filter(delivery=delivery).values_list("life", "attempt", "outcome"))
    assert lives == [(1, 1, "failure"), (1, 2, "failure"), (2, 1, "success")]
    detail = client.get(f"/api/v1/messages/{message_id}/", HTTP_AUTHORIZATION=f"Bearer {key}").json()
    assert len(detail["destinations"][0]["timeline"]) == 3
    assert {r.headers["webhook-id"] for r in receiver.requests("/hook")} == {message_id}


def dead_letter_one(client: Client, key: str, room_id: int, subscription_id: int) -> str:
    """Publish a message, pull it and nack it to the dead letters; return its id."""
    message_id = publish(client, key, room_id)["message_id"]
    [message] = pull(client, key, subscription_id)
    call(client, key, f"/api/v1/subscriptions/{subscription_id}/nack/",
         {"ack_ids": [message["ack_id"]], "action": "dead_letter"})
    return message_id


def test_purged_dead_letters_leave_the_list_but_not_the_log(client: Client, setup) -> None:
    room, key, subscription = setup
    message_id = dead_letter_one(client, key, room.pk, subscription.pk)
    path = f"/api/v1/subscriptions/{subscription.pk}/dead-letters/"
    bad = client.post(path + "purge/", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert bad.status_code == 400 and "message_ids" in bad.json()
    assert call(client, key, path + "purge/", {"all": True})["count"] == 1
    assert client.get(path, HTTP_AUTHORIZATION=f"Bearer {key}").json()["results"] == []
    assert Delivery.objects.get(message_id=message_id).status == "dead_lettered"


def test_purging_with_delete_still_works_and_names_its_successor(client: Client, setup) -> None:
    room, key, subscription = setup
    message_id = dead_letter_one(client, key, room.pk, subscription.pk)
    path = f"/api/v1/subscriptions/{subscription.pk}/dead-letters/"
    refused = client.delete(path, "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert refused.status_code == 400 and refused["Sunset"] == "Tue, 01 Jun 2027 00:00:00 GMT"
    purged = client.delete(path, json.dumps({"message_ids": [message_id]}), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {key}")
    assert purged.status_code == 200 and purged.json() == {"count": 1}
    assert purged["Deprecation"].startswith("@") and purged["Sunset"] == "Tue, 01 Jun 2027 00:00:00 GMT"
    assert purged["Link"] == f'<{path}purge/>; rel="successor-version"'
    assert client.get(path, HTTP_AUTHORIZATION=f"Bearer {key}").json()["results"] == []
