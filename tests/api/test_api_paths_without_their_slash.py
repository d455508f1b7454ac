"""An API path sent without its trailing slash gets a JSON 404 naming the path meant, never a redirect.

Django's APPEND_SLASH answered `POST /api/v1/rooms` with a 301, which clients follow with a GET and no
body: the room was never created and the client saw a list of rooms.
"""

from __future__ import annotations

import pytest
from django.test import Client

from rooms.models import Room
from tests.callers import call_api
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("method", "path", "body"), [
    ("post", "/api/v1/rooms", {"name": "orders"}),
    ("get", "/api/v1/rooms", None),
    ("post", "/api/v1/rooms/{room}/messages", {"event_type": "order.created", "event_version": "1", "payload": {}}),
    ("patch", "/api/v1/subscriptions/{subscription}", {"max_in_flight": 2}),
    ("post", "/api/v1/subscriptions/{subscription}/pause", None),
])
def test_a_path_missing_its_slash_is_a_json_404_naming_the_path_meant(client: Client, admin_key: str, method: str,
                                                                      path: str, body: dict | None) -> None:
    room = make_room(name="existing")
    path = path.format(room=room.pk, subscription=make_subscription(room).pk)
    response = call_api(client, method, path, body, admin_key)
    assert response.status_code == 404, (response.status_code, response.headers.get("Location"))
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": f"no API endpoint at {path}; did you mean {path}/? Every API path ends with "
                                         f"a slash (nothing was done: send the request again to {path}/)"}
    assert list(Room.objects.values_list("name", flat=True)) == ["existing"]


def test_a_path_that_is_no_endpoint_with_a_slash_either_is_a_plain_json_404(client: Client, admin_key: str) -> None:
    response = call_api(client, "post", "/api/v1/roms", {"name": "orders"}, admin_key)
    assert response.status_code == 404
    assert response.json() == {"detail": "no API endpoint at /api/v1/roms"}


def test_the_console_still_adds_the_missing_slash(client: Client) -> None:
    response = client.get("/rooms")
    assert response.status_code == 301 and response["Location"] == "/rooms/"
