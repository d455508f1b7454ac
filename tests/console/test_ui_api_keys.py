"""API keys in the web UI: a new key is shown once and works; scoping; revoking."""

from __future__ import annotations

import pytest
from django.test import Client

from rooms.models import ApiKey
from tests.factories import make_room

pytestmark = pytest.mark.django_db


def test_a_new_room_key_is_shown_once_and_authenticates_for_its_room(staff_client: Client) -> None:
    room, other = make_room(), make_room()

    response = staff_client.post("/api-keys/", {"name": "shop", "rooms": [room.pk]})

    plaintext = response.context["plaintext"]
    assert response.status_code == 200 and plaintext in response.content.decode()
    assert response["Cache-Control"] == "no-store"
    key = ApiKey.authenticate(plaintext)
    assert key is not None and key.can_use_room(room.pk) and not key.can_use_room(other.pk)
    assert plaintext not in staff_client.get("/api-keys/").content.decode()
    api = Client().get("/api/v1/rooms/", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert [r["id"] for r in api.json()["results"]] == [room.pk]


def test_an_admin_key_takes_no_rooms(staff_client: Client) -> None:
    room = make_room()
    response = staff_client.post("/api-keys/", {"name": "ops", "is_admin": "on", "rooms": [room.pk]})
    key = ApiKey.authenticate(response.context["plaintext"])
    assert key.is_admin and list(key.rooms.all()) == []


@pytest.mark.parametrize(("fields", "message"), [
    ({"name": "shop"}, "Choose at least one room, or make it an admin key."),
    ({"name": "", "is_admin": "on"}, "This field is required."),
])
def test_a_key_without_a_name_or_scope_is_refused(staff_client: Client, fields: dict, message: str) -> None:
    response = staff_client.post("/api-keys/", fields)
    assert message in response.content.decode()
    assert not ApiKey.objects.exists()


def test_revoking_a_key_stops_it_at_once(staff_client: Client) -> None:
    key, plaintext = ApiKey.issue("shop", is_admin=True)

    response = staff_client.post(f"/api-keys/{key.pk}/revoke/")

    assert response.status_code == 302
    assert ApiKey.authenticate(plaintext) is None
    assert Client().get("/api/v1/rooms/", HTTP_AUTHORIZATION=f"Bearer {plaintext}").status_code == 401
    assert "revoked" in staff_client.get("/api-keys/").content.decode()
