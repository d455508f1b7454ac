"""A push subscription's max_in_flight × timeout_ms is bounded (DOVECOTE_MAX_IN_FLIGHT_SECONDS), API and console.

1,000 POSTs in flight that may each last 300 s would hold 300,000 socket-seconds: one room key could
keep a worker's sockets busy. The bound names both fields and the setting; each field keeps its own limits.
"""

from __future__ import annotations

import pytest
from django.test import Client

from rooms.models import Room
from subscriptions.models import Subscription
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

PUSH = {"name": "billing", "type": "push", "push_url": "http://127.0.0.1:9/hook"}
ATTACK = {"max_in_flight": 1000, "timeout_ms": 300_000}
MESSAGE = ("max_in_flight × timeout_ms is 1000 × 300000 ms = 300000 in-flight seconds; at most 6000 "
           "(DOVECOTE_MAX_IN_FLIGHT_SECONDS): lower max_in_flight or timeout_ms")


@pytest.fixture
def room() -> Room:
    room = make_room()
    make_event_type(room)
    return room


def test_an_api_push_subscription_over_the_in_flight_seconds_bound_is_400_naming_both_fields(
        client: Client, admin_key: str, room: Room) -> None:
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/", PUSH | ATTACK, admin_key)

    assert response.status_code == 400, response.content
    assert response.json() == {"max_in_flight": [MESSAGE], "timeout_ms": [MESSAGE]}
    assert not Subscription.objects.exists()


def test_a_patch_is_checked_against_the_values_it_leaves_as_they_are(client: Client, admin_key: str,
                                                                    room: Room) -> None:
    subscription = make_subscription(room, max_in_flight=100, timeout_ms=60_000)  # 6000 s: at the bound

    raised = call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/", {"timeout_ms": 60_001},
                      admin_key)
    lowered = call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/",
                       {"max_in_flight": 20, "timeout_ms": 300_000}, admin_key)

    assert raised.status_code == 400 and set(raised.json()) == {"max_in_flight", "timeout_ms"}
    assert "100 × 60001 ms" in raised.json()["timeout_ms"][0]
    assert lowered.status_code == 200, lowered.content
    subscription.refresh_from_db()
    assert (subscription.max_in_flight, subscription.timeout_ms) == (20, 300_000)


def test_a_pull_subscription_holds_no_socket_and_is_not_bounded(client: Client, admin_key: str,
                                                               room: Room) -> None:
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/",
                        {"name": "audit", "type": "pull"} | ATTACK, admin_key)

    assert response.status_code == 201, response.content


def test_each_field_keeps_its_own_limits(client: Client, admin_key: str, room: Room) -> None:
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/",
                        PUSH | {"max_in_flight": 1001, "timeout_ms": 300_001}, admin_key)

    assert response.status_code == 400
    assert "less than or equal to 1000" in response.json()["max_in_flight"][0]
    assert "less than or equal to 300000" in response.json()["timeout_ms"][0]


def test_the_console_form_refuses_it_on_both_fields(staff_client: Client, room: Room) -> None:
    form = {**PUSH, "delivery_delay_ms": "", "delivery_delay_multiplier": "", "delivery_attempts": "",
            "max_delivery_delay_ms": "", "max_in_flight": "1000", "timeout_ms": "300000"}

    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/new/", form)

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert errors["max_in_flight"] == [MESSAGE[0].upper() + MESSAGE[1:] + "."]
    assert errors["timeout_ms"] == errors["max_in_flight"]
    assert not Subscription.objects.exists()
