"""GET /api/v1/messages/ and /messages/{id}/: filters, scope, the attempt timeline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from delivery.models import DeliveryAttempt
from rooms.models import ApiKey
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


def get(client: Client, path: str, key: str, **params: str):
    return client.get(path, params, HTTP_AUTHORIZATION=f"Bearer {key}")


@pytest.fixture
def log():
    """Two rooms; room A has two subscriptions, one message delivered and one retrying."""
    room_a, room_b = make_room(), make_room()
    billing, audit = make_subscription(room_a), make_subscription(room_a)
    elsewhere = make_subscription(room_b)
    paid = make_message(room_a, event_type="order.paid", correlation_id="corr-paid")
    created = make_message(room_a, event_type="order.created", correlation_id="corr-created",
                           created_at=timezone.now() - timedelta(hours=2))
    other = make_message(room_b, correlation_id="corr-other")
    delivered = make_delivery(paid, billing, status="delivered", attempts=2)
    make_delivery(paid, audit, status="retrying", attempts=1)
    make_delivery(created, billing, status="queued", created_at=created.created_at)
    make_delivery(other, elsewhere, status="delivered")
    DeliveryAttempt.objects.create(delivery=delivered, correlation_id="corr-paid", attempt=1, outcome="failure",
                                   status_code=500, error="HTTP 500", next_delay_ms=400, duration_ms=12)
    DeliveryAttempt.objects.create(delivery=delivered, correlation_id="corr-paid", attempt=2, outcome="success",
                                   status_code=204, duration_ms=8,
                                   started_at=timezone.now() + timedelta(milliseconds=400))
    return {"room_a": room_a, "room_b": room_b, "billing": billing, "audit": audit, "paid": paid}


def test_the_log_has_one_row_per_destination_newest_first(client: Client, admin_key: str, log) -> None:
    rows = get(client, "/api/v1/messages/", admin_key).json()["results"]
    assert len(rows) == 4
    assert rows[-1]["correlation_id"] == "corr-created"
    assert set(rows[0]) >= {"message_id", "correlation_id", "room", "subscription", "destination", "event_type",
                            "event_version", "status", "attempts", "next_attempt_at", "created_at", "updated_at"}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "retrying"}, 1),
        ({"correlation_id": "corr-paid"}, 2),
        ({"event_type": "order.paid"}, 2),
        ({"since": (timezone.now() - timedelta(hours=1)).isoformat()}, 3),
        ({"until": (timezone.now() - timedelta(hours=1)).isoformat()}, 1),
    ],
)
def test_filters_narrow_the_log(client: Client, admin_key: str, log, params, expected) -> None:
    assert len(get(client, "/api/v1/messages/", admin_key, **params).json()["results"]) == expected


def test_room_and_subscription_filters(client: Client, admin_key: str, log) -> None:
    by_room = get(client, "/api/v1/messages/", admin_key, room=str(log["room_a"].pk)).json()["results"]
    assert len(by_room) == 3
    by_sub = get(client, "/api/v1/messages/", admin_key, subscription=str(log["audit"].pk)).json()["results"]
    assert [r["status"] for r in by_sub] == ["retrying"]


def test_a_bad_filter_value_is_400_naming_it(client: Client, admin_key: str, log) -> None:
    response = get(client, "/api/v1/messages/", admin_key, status="lost", since="yesterday")
    assert response.status_code == 400
    assert set(response.json()) == {"status", "since"}


def test_a_room_key_sees_only_its_rooms(client: Client, log) -> None:
    key = ApiKey.issue("b only", rooms=[log["room_b"]])[1]
    rows = get(client, "/api/v1/messages/", key).json()["results"]
    assert [r["correlation_id"] for r in rows] == ["corr-other"]


def test_the_message_page_has_the_payload_and_each_timeline(client: Client, admin_key: str, log) -> None:
    body = get(client, f"/api/v1/messages/{log['paid'].pk}/", admin_key).json()
    assert body["payload"] == log["paid"].payload and body["correlation_id"] == "corr-paid"
    by_subscription = {d["subscription"]: d for d in body["destinations"]}
    billing = by_subscription[log["billing"].pk]
    assert billing["status"] == "delivered"
    assert [(a["attempt"], a["outcome"], a["status_code"], a["next_delay_ms"]) for a in billing["timeline"]] == [
        (1, "failure", 500, 400), (2, "success", 204, None)
    ]
    assert by_subscription[log["audit"].pk]["timeline"] == []


def test_the_message_page_of_another_room_is_403_and_unknown_is_404(client: Client, log) -> None:
    key = ApiKey.issue("b only", rooms=[log["room_b"]])[1]
    assert get(client, f"/api/v1/messages/{log['paid'].pk}/", key).status_code == 403
    assert get(client, "/api/v1/messages/00000000-0000-0000-0000-000000000000/", key).status_code == 404


def test_the_log_needs_a_key(client: Client) -> None:
    assert client.get("/api/v1/messages/").status_code == 401


def test_whoami_names_the_key_and_its_rooms(client: Client, admin_key: str) -> None:
    room = make_room()
    key = ApiKey.issue("shop", rooms=[room])[1]
    assert get(client, "/api/v1/whoami/", key).json() == {"name": "shop", "admin": False, "rooms": [room.pk]}
    assert get(client, "/api/v1/whoami/", admin_key).json() == {"name": "admin", "admin": True, "rooms": None}
    assert client.get("/api/v1/whoami/").status_code == 401
