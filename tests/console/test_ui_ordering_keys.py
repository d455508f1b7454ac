"""Parked ordering keys in the console and the API: shown on the message and the subscription, released there."""

from __future__ import annotations

import pytest
from django.test import Client

from delivery.models import Delivery
from rooms.models import Room
from subscriptions.models import Subscription
from tests.callers import call_api
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


@pytest.fixture
def parked() -> tuple[Subscription, list[Delivery]]:
    """Key "a" parked by its first event's dead letter, two events of it held behind."""
    room: Room = make_room()
    make_event_type(room)
    subscription = make_subscription(room, type="pull", ordering="park")
    rows = []
    for status in ("dead_lettered", "held", "held"):
        message = make_message(room, ordering_key="a")
        rows.append(make_delivery(message, subscription, status=status, ordering_key="a",
                                  parks_key=status == "dead_lettered"))
    return subscription, rows


def test_the_message_page_shows_the_parked_key_and_the_held_events(staff_client: Client, parked) -> None:
    _, (dead, held, _) = parked
    page = staff_client.get(f"/messages/{dead.message_id}/").content.decode()
    assert "data-parks-key" in page and "Release key" in page and "ordering key <span class=\"mono\">a</span>" in page
    waiting = staff_client.get(f"/messages/{held.message_id}/").content.decode()
    assert "data-held" in waiting


def test_the_subscription_page_lists_parked_keys_with_what_waits(staff_client: Client, parked) -> None:
    subscription, _ = parked
    response = staff_client.get(f"/subscriptions/{subscription.pk}/")
    assert [(p.ordering_key, p.waiting) for p in response.context["parked_keys"]] == [("a", 2)]
    assert 'data-ordering-key="a"' in response.content.decode()


def test_releasing_a_parked_key_in_the_console_sends_its_next_event_only(staff_client: Client, parked) -> None:
    subscription, (dead, first_held, second_held) = parked
    response = staff_client.post(f"/subscriptions/{subscription.pk}/release-key/", {"ordering_key": "a"}, follow=True)
    assert "Ordering key &#x27;a&#x27; released: its next event is on its way." in response.content.decode()
    statuses = [Delivery.objects.get(pk=d.pk) for d in (dead, first_held, second_held)]
    assert [(d.status, d.parks_key) for d in statuses] == [("dead_lettered", False), ("pending", False),
                                                           ("held", False)]


def test_releasing_a_key_that_is_not_parked_says_so(staff_client: Client, parked) -> None:
    subscription, _ = parked
    response = staff_client.post(f"/subscriptions/{subscription.pk}/release-key/", {"ordering_key": "b"},
                                 follow=True)
    assert "is not parked" in response.content.decode()


def test_the_api_lists_and_releases_parked_keys(client: Client, admin_key: str, parked) -> None:
    subscription, (dead, first_held, _) = parked
    listed = call_api(client, "get", f"/api/v1/subscriptions/{subscription.pk}/parked-keys/", None, admin_key)
    assert [(p["ordering_key"], p["message_id"], p["waiting"]) for p in listed.json()] == [
        ("a", str(dead.message_id), 2)]
    released = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/parked-keys/release/",
                        {"ordering_key": "a"}, admin_key)
    assert released.json() == {"ordering_key": "a", "released_message_id": str(first_held.message_id)}
    detail = call_api(client, "get", f"/api/v1/messages/{first_held.message_id}/", None, admin_key).json()
    assert detail["ordering_key"] == "a"
    assert [(d["status"], d["ordering_key"]) for d in detail["destinations"]] == [("pending", "a")]


def test_the_subscription_form_sets_ordering(staff_client: Client) -> None:
    room = make_room()
    staff_client.post(f"/rooms/{room.pk}/subscriptions/new/", {"name": "in-order", "type": "pull",
                                                               "ordering": "park", "max_in_flight": 10,
                                                               "timeout_ms": 10000})
    assert Subscription.objects.get(name="in-order").ordering == "park"


def test_the_api_sets_ordering_and_refuses_an_unknown_mode(client: Client, admin_key: str) -> None:
    room = make_room()
    path = f"/api/v1/rooms/{room.pk}/subscriptions/"
    created = call_api(client, "post", path, {"name": "in-order", "type": "pull", "ordering": "on"}, admin_key)
    assert created.json()["ordering"] == "on"
    bad = call_api(client, "post", path, {"name": "x", "type": "pull", "ordering": "sorted"}, admin_key)
    assert bad.status_code == 400 and "ordering" in bad.json()
