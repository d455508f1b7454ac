"""A correlation id travels as an HTTP header on every push: one that cannot be a header is refused at publish."""

from __future__ import annotations

import pytest
from django.test import Client

from delivery.models import Message
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db


def event(**fields: object) -> dict:
    return {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 1}, **fields}


@pytest.mark.parametrize("correlation_id", ["order-1\r\nX-Evil: 1", "tab\there", "naïve", "bell\x07"])
def test_a_correlation_id_that_cannot_be_a_header_is_400_naming_it(client: Client, admin_key: str,
                                                                    correlation_id: str) -> None:
    room = make_room()
    make_event_type(room)
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", event(correlation_id=correlation_id),
                        admin_key)
    assert response.status_code == 400
    [message] = response.json()["correlation_id"]
    assert "HTTP header" in message
    batch = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/",
                     {"messages": [event(), event(correlation_id=correlation_id)]}, admin_key)
    assert batch.status_code == 400 and set(batch.json()["messages"]) == {"1"}
    assert not Message.objects.filter(room=room).exists()


def test_a_printable_correlation_id_is_kept(client: Client, admin_key: str) -> None:
    room = make_room()
    make_event_type(room)
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", event(correlation_id="order 42/a:b"),
                        admin_key)
    assert response.status_code == 202 and response.json()["correlation_id"] == "order 42/a:b"


def test_the_ui_test_event_refuses_it_too(client: Client, member) -> None:
    room = make_room()
    make_event_type(room)
    subscription = make_subscription(room)
    client.force_login(member)
    response = client.post(f"/subscriptions/{subscription.pk}/test-event/",
                           {"payload": '{"a": 1}', "correlation_id": "a\r\nb"})
    assert response.status_code == 200 and "HTTP header" in response.content.decode()
    assert not Message.objects.filter(room=room).exists()
