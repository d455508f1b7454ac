"""An event no subscription matches is recorded as unroutable, findable, and re-publishable."""

from __future__ import annotations

import pytest
from django.test import Client

from delivery.models import Delivery, Message
from rooms.models import ApiKey, Room
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

EVENT = {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 7},
         "correlation_id": "lost-order-7"}


@pytest.fixture
def room() -> Room:
    room = make_room()
    make_event_type(room)
    return room


def publish(client: Client, room: Room, key: str, event: dict = EVENT) -> dict:
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", event, key)
    assert response.status_code == 202, response.content
    return response.json()


def test_a_publish_no_subscription_matches_says_it_reached_no_destination(client: Client, room: Room,
                                                                          admin_key: str) -> None:
    make_subscription(room, name="shipped-only", event_types=[{"name": "order.shipped"}])
    reply = publish(client, room, admin_key)
    assert (reply["destination_count"], reply["destinations"]) == (0, [])
    row = Delivery.objects.get(message_id=reply["message_id"])
    assert (row.status, row.subscription_id, row.destination) == ("unroutable", None, "")


def test_a_routed_publish_counts_its_destinations_and_leaves_no_unroutable_row(client: Client, room: Room,
                                                                               admin_key: str) -> None:
    make_subscription(room, type="pull")
    make_subscription(room, type="pull")
    reply = publish(client, room, admin_key)
    assert reply["destination_count"] == 2
    assert not Delivery.objects.filter(message_id=reply["message_id"], status="unroutable").exists()


def test_an_unroutable_publish_is_found_in_the_api_log_by_correlation_id(client: Client, room: Room,
                                                                         admin_key: str) -> None:
    reply = publish(client, room, admin_key)
    rows = call_api(client, "get", "/api/v1/messages/", {"correlation_id": "lost-order-7"}, admin_key).json()
    assert [(r["message_id"], r["status"], r["subscription"]) for r in rows["results"]] == [
        (reply["message_id"], "unroutable", None)]
    by_status = call_api(client, "get", "/api/v1/messages/", {"status": "unroutable"}, admin_key).json()
    assert [r["correlation_id"] for r in by_status["results"]] == ["lost-order-7"]
    detail = call_api(client, "get", f"/api/v1/messages/{reply['message_id']}/", None, admin_key).json()
    assert [d["status"] for d in detail["destinations"]] == ["unroutable"]


def test_an_unroutable_publish_is_found_in_the_ui_by_correlation_id(staff_client: Client, client: Client,
                                                                    room: Room, admin_key: str) -> None:
    reply = publish(client, room, admin_key)
    page = staff_client.get("/messages/", {"q": "lost-order-7"})
    assert [(str(d.message_id), d.status) for d in page.context["page"].rows] == [(reply["message_id"], "unroutable")]
    detail = staff_client.get(f"/messages/{reply['message_id']}/").content.decode()
    assert "no subscription matched" in detail and "Re-publish" in detail


def test_the_dashboard_counts_the_last_hours_unroutable_messages(staff_client: Client, client: Client, room: Room,
                                                                 admin_key: str) -> None:
    publish(client, room, admin_key)
    publish(client, room, admin_key, {**EVENT, "correlation_id": "lost-order-8"})
    assert staff_client.get("/").context["last_hour"].stats["unroutable"] == 2


def test_republishing_sends_it_to_the_subscriptions_that_match_now(client: Client, room: Room, admin_key: str,
                                                                   django_capture_on_commit_callbacks) -> None:
    reply = publish(client, room, admin_key)
    pull = make_subscription(room, type="pull")
    make_subscription(room, type="pull", name="other-events", event_types=[{"name": "order.shipped"}])
    with django_capture_on_commit_callbacks() as sends:
        again = call_api(client, "post", f"/api/v1/messages/{reply['message_id']}/republish/", None, admin_key)
    assert again.status_code == 202
    assert again.json() == {"message_id": reply["message_id"], "correlation_id": "lost-order-7",
                            "destination_count": 1,
                            "destinations": [{"subscription_id": pull.pk, "destination": pull.destination}]}
    assert len(sends) == 1  # the relay, after commit
    rows = Delivery.objects.filter(message_id=reply["message_id"])
    assert [(r.subscription_id, r.status) for r in rows] == [(pull.pk, "pending")]
    assert Message.objects.get(pk=reply["message_id"]).correlation_id == "lost-order-7"


def test_republishing_what_still_matches_nothing_is_409_and_keeps_it_unroutable(client: Client, room: Room,
                                                                                admin_key: str) -> None:
    reply = publish(client, room, admin_key)
    make_subscription(room, type="pull", event_types=[{"name": "order.paid"}])
    again = call_api(client, "post", f"/api/v1/messages/{reply['message_id']}/republish/", None, admin_key)
    assert again.status_code == 409
    assert "still matches no subscription" in again.json()["detail"]
    assert Delivery.objects.get(message_id=reply["message_id"]).status == "unroutable"


def test_republishing_a_routed_message_is_409(client: Client, room: Room, admin_key: str) -> None:
    make_subscription(room, type="pull")
    reply = publish(client, room, admin_key)
    again = call_api(client, "post", f"/api/v1/messages/{reply['message_id']}/republish/", None, admin_key)
    assert again.status_code == 409
    assert "is not unroutable" in again.json()["detail"]


def test_a_key_of_another_room_cannot_republish(client: Client, room: Room, admin_key: str) -> None:
    reply = publish(client, room, admin_key)
    other = ApiKey.issue("other", rooms=[make_room()])[1]
    again = call_api(client, "post", f"/api/v1/messages/{reply['message_id']}/republish/", None, other)
    assert again.status_code == 403


def test_the_ui_republishes_an_unroutable_message(staff_client: Client, client: Client, room: Room,
                                                  admin_key: str) -> None:
    reply = publish(client, room, admin_key)
    pull = make_subscription(room, type="pull")
    response = staff_client.post(f"/messages/{reply['message_id']}/republish/", follow=True)
    assert "Re-published to 1 destination." in response.content.decode()
    assert [d.subscription_id for d in Delivery.objects.filter(message_id=reply["message_id"])] == [pull.pk]
