"""The Django admin shows Dovecote's rows and changes none of them; revoking a key is its one action.

Rooms, subscriptions and keys change through the API and the console, which check every rule (a
push URL that may be reached, a key's scope fixed at creation): whatever the admin user's rights,
a POST to an admin form is refused and leaves the row as it was.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.db import models
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery, DeliveryAttempt, Message, SendRecord
from rooms.models import ApiKey, EventType, Room
from subscriptions.models import Subscription
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db

StaffWith = Callable[..., User]
OUR_APPS = {"rooms", "subscriptions", "delivery", "analytics"}


def registered() -> list[type[models.Model]]:
    return sorted((m for m in admin.site._registry if m._meta.app_label in OUR_APPS), key=lambda m: m._meta.label)


def one_of_each() -> dict[type[models.Model], models.Model]:
    room = make_room(name="orders")
    subscription = make_subscription(room, name="billing")
    message = make_message(room)
    delivery = make_delivery(message, subscription)
    return {
        Room: room, EventType: make_event_type(room), Subscription: subscription, Message: message,
        Delivery: delivery, ApiKey: ApiKey.issue("shop", rooms=[room])[0],
        DeliveryAttempt: DeliveryAttempt.objects.create(delivery=delivery, correlation_id="c", attempt=1,
                                                        outcome="failure", started_at=timezone.now()),
        SendRecord: SendRecord.objects.create(delivery=delivery, kind="publish", attempt=1,
                                                          destination=delivery.destination, correlation_id="c"),
    }


def admin_path(row: models.Model, view: str = "change") -> str:
    meta = row._meta
    return f"/admin/{meta.app_label}/{meta.model_name}/{row.pk}/{view}/"


def snapshot(row: models.Model) -> dict:
    return type(row).objects.filter(pk=row.pk).values().get()


def test_every_model_of_ours_in_the_admin_is_covered() -> None:
    assert set(registered()) == {Room, EventType, ApiKey, Subscription, Message, Delivery, DeliveryAttempt,
                                 SendRecord}


@pytest.mark.parametrize("model", registered(), ids=lambda m: m._meta.label)
def test_a_superuser_sees_every_row_and_can_add_change_or_delete_none(client: Client, owner: User,
                                                                     model: type[models.Model]) -> None:
    row = one_of_each()[model]
    meta = row._meta
    client.force_login(owner)
    before = snapshot(row)

    page = client.get(admin_path(row))
    listing = client.get(f"/admin/{meta.app_label}/{meta.model_name}/")

    assert page.status_code == 200 and listing.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert client.post(admin_path(row), {"name": "changed"}).status_code == 403
    assert client.get(f"/admin/{meta.app_label}/{meta.model_name}/add/").status_code == 403
    assert client.post(admin_path(row, "delete"), {"post": "yes"}).status_code == 403
    assert snapshot(row) == before


def test_the_admin_cannot_save_a_push_url_the_api_refuses(client: Client, owner: User, admin_key: str) -> None:
    subscription = make_subscription(make_room(), name="billing")
    client.force_login(owner)
    form = {"room": subscription.room_id, "name": "billing", "type": "push", "status": "active",
            "push_url": "http://169.254.169.254/latest/meta-data/", "max_in_flight": 10, "timeout_ms": 10000,
            "ordering": "off", "breaker_state": "closed", "breaker_failures": 0, "breaker_probes": 0,
            "breaker_on_disable": "hold", "event_types": "[]"}

    response = client.post(admin_path(subscription), form)

    assert response.status_code == 403
    subscription.refresh_from_db()
    assert subscription.push_url == "http://127.0.0.1:9/hook"
    api = Client().patch(f"/api/v1/subscriptions/{subscription.pk}/", {"push_url": form["push_url"]},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {admin_key}")
    assert api.status_code == 400 and "push_url" in api.json()  # the rule the admin no longer bypasses


def test_the_revoke_permission_changes_no_key_scope(client: Client, staff_with: StaffWith) -> None:
    room, other = make_room(), make_room()
    key, plaintext = ApiKey.issue("shop", rooms=[room])
    client.force_login(staff_with("rooms.change_apikey"))
    before = (snapshot(key), list(key.rooms.all()))

    response = client.post(admin_path(key), {"name": "shop", "is_admin": "on", "rooms": [room.pk, other.pk],
                                             "revoked_at_0": "", "revoked_at_1": ""})

    assert response.status_code == 403
    key.refresh_from_db()
    assert (snapshot(key), list(key.rooms.all())) == before
    assert not key.is_admin and ApiKey.authenticate(plaintext) is not None


def revoke_in_the_admin(client: Client, *keys: ApiKey) -> None:
    client.post("/admin/rooms/apikey/", {"action": "revoke", "_selected_action": [k.pk for k in keys],
                                         "index": "0", "select_across": "0"})


def test_revoking_is_an_admin_action_of_its_own_that_needs_the_revoke_permission(
        client: Client, staff_with: StaffWith) -> None:
    room = make_room()
    key, plaintext = ApiKey.issue("shop", rooms=[room])
    _, kept_plaintext = ApiKey.issue("ops", is_admin=True)

    client.force_login(staff_with("rooms.view_apikey"))
    assert b'value="revoke"' not in client.get("/admin/rooms/apikey/").content
    revoke_in_the_admin(client, key)
    assert ApiKey.authenticate(plaintext) is not None

    revoker = staff_with("rooms.change_apikey")
    client.force_login(revoker)
    assert b'value="revoke"' in client.get("/admin/rooms/apikey/").content
    revoke_in_the_admin(client, key)

    key.refresh_from_db()
    assert key.is_revoked and ApiKey.authenticate(plaintext) is None
    assert list(key.rooms.all()) == [room] and not key.is_admin
    assert ApiKey.authenticate(kept_plaintext) is not None  # only the keys chosen
    history = LogEntry.objects.filter(object_id=str(key.pk), content_type__model="apikey")
    assert [(entry.user.username, entry.change_message) for entry in history] == [(revoker.username, "Revoked.")]
