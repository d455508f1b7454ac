"""Minting API keys and the UI's destructive actions need Django permissions, not only staff status."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from delivery.models import Delivery
from rooms.models import ApiKey, Room
from subscriptions.models import Subscription
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    room = make_room()
    subscription = make_subscription(room)
    dead = make_delivery(make_message(room), subscription, status=Delivery.Status.DEAD_LETTERED)
    key, _ = ApiKey.issue("existing", rooms=[room])
    lost = Delivery.objects.create(message=make_message(room), destination="", status=Delivery.Status.UNROUTABLE)
    make_delivery(make_message(room, ordering_key="a"), subscription, status=Delivery.Status.DEAD_LETTERED,
                  ordering_key="a", parks_key=True)
    return room, subscription, dead, key, lost


def actions(world) -> dict[str, tuple[str, dict]]:
    room, subscription, dead, key, lost = world
    dead_letter_action = f"/subscriptions/{subscription.pk}/dead-letters/action/"
    return {
        "mint an admin key": ("/api-keys/", {"name": "root", "is_admin": "on"}),
        "revoke a key": (f"/api-keys/{key.pk}/revoke/", {}),
        "delete a room": (f"/rooms/{room.pk}/delete/", {}),
        "delete a subscription": (f"/subscriptions/{subscription.pk}/delete/", {}),
        "rotate a signing secret": (f"/subscriptions/{subscription.pk}/rotate-secret/", {"confirmed": "on"}),
        "replay dead letters": (dead_letter_action, {"choice": "replay:all", "confirmed": "on"}),
        "purge dead letters": (dead_letter_action, {"choice": "purge:selected", "message_ids": [str(dead.message_id)],
                                                     "confirmed": "on"}),
        "re-publish an unroutable message": (f"/messages/{lost.message_id}/republish/", {}),
        "release a parked ordering key": (f"/subscriptions/{subscription.pk}/release-key/", {"ordering_key": "a"}),
    }


ACTIONS = ["mint an admin key", "revoke a key", "delete a room", "delete a subscription", "rotate a signing secret",
           "replay dead letters", "purge dead letters", "re-publish an unroutable message",
           "release a parked ordering key"]


def state(world) -> tuple:
    room, subscription, dead, key, _ = world
    secret = Subscription.objects.filter(pk=subscription.pk).values_list("signing_secret", flat=True).first()
    dead_now = Delivery.objects.filter(pk=dead.pk).values_list("status", "purged_at").first()
    routing = list(Delivery.objects.filter(message__room=room).order_by("pk").values_list("status", "parks_key"))
    return (ApiKey.objects.count(), ApiKey.objects.get(pk=key.pk).revoked_at, Room.objects.filter(pk=room.pk).exists(),
            secret, dead_now, routing)


@pytest.mark.parametrize("action", ACTIONS)
def test_a_staff_user_without_the_permission_is_refused_and_nothing_changes(client: Client, viewer: User, world,
                                                                          action: str) -> None:
    client.force_login(viewer)
    before = state(world)
    path, data = actions(world)[action]
    response = client.post(path, data)
    assert response.status_code == 403
    assert state(world) == before


@pytest.mark.parametrize("action", ACTIONS)
def test_an_operator_with_the_permission_may(client: Client, member: User, world, action: str) -> None:
    client.force_login(member)
    before = state(world)
    path, data = actions(world)[action]
    response = client.post(path, data)
    assert response.status_code in (200, 302), response.content[:300]
    assert state(world) != before


def test_the_delete_confirmation_pages_need_the_permission_too(client: Client, viewer: User, world) -> None:
    room, subscription, *_ = world
    client.force_login(viewer)
    assert client.get(f"/rooms/{room.pk}/delete/").status_code == 403
    assert client.get(f"/subscriptions/{subscription.pk}/delete/").status_code == 403
    assert client.get("/api-keys/").status_code == 200  # looking is fine
