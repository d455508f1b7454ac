"""A new signing secret never waits in the session table: only its fingerprint does, until its page shows it once.

The console redirects after creating a subscription or rotating its secret, and the next page shows
the secret from the subscription's row (encrypted at rest); the database-backed session holds no
plaintext at any moment.
"""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

PUSH = {"name": "billing", "type": "push", "push_url": "http://127.0.0.1:9/hook", "delivery_delay_ms": "",
        "delivery_delay_multiplier": "", "delivery_attempts": "", "max_delivery_delay_ms": "",
        "max_in_flight": "10", "timeout_ms": "10000"}


@pytest.fixture
def room() -> Room:
    room = make_room(name="orders")
    make_event_type(room)
    return room


def forms_of(secret: str) -> list[str]:
    """The secret as it could be written: whole, without its prefix, and as raw bytes in other encodings."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    return [secret, secret.removeprefix("whsec_"), key.hex(), base64.urlsafe_b64encode(key).decode().rstrip("=")]


def sessions_holding(secret: str) -> list[str]:
    """Return the session rows whose stored data or decoded contents hold the secret in any form."""
    holding = []
    for session in Session.objects.all():
        contents = repr(session.get_decoded())
        if any(form in session.session_data or form in contents for form in forms_of(secret)):
            holding.append(f"{session.session_key}: {contents}")
    return holding


def new_secret(client: Client, room: Room, event: str) -> tuple[Subscription, str]:
    """Create a push subscription or rotate its secret in the console; return it and where the browser is sent."""
    if event == "created":
        response = client.post(f"/rooms/{room.pk}/subscriptions/new/", PUSH)
        subscription = Subscription.objects.get(room=room, name="billing")
    else:
        subscription = make_subscription(room, name="billing")
        response = client.post(f"/subscriptions/{subscription.pk}/rotate-secret/",
                               {"confirmed": "yes", "overlap_hours": "1"})
        subscription.refresh_from_db()
    assert response.status_code == 302, response.content[:300]
    return subscription, response["Location"]


@pytest.mark.parametrize("event", ["created", "rotated"])
def test_a_new_secret_is_never_in_the_session_table_and_is_shown_once(staff_client: Client, room: Room,
                                                                      event: str) -> None:
    subscription, secret_page = new_secret(staff_client, room, event)
    secret = subscription.signing_secret
    assert Session.objects.exists()

    assert sessions_holding(secret) == []  # while the secret waits for its page

    shown = staff_client.get(secret_page).content.decode()
    assert secret in shown
    assert sessions_holding(secret) == []
    assert secret not in staff_client.get(secret_page).content.decode()  # once


def test_another_operator_cannot_see_a_secret_made_in_my_session(staff_client: Client, owner: User,
                                                                room: Room) -> None:
    subscription, secret_page = new_secret(staff_client, room, "rotated")
    other = Client()
    other.force_login(owner)

    page = other.get(secret_page).content.decode()

    assert subscription.signing_secret not in page and "has been shown already" in page
    assert subscription.signing_secret in staff_client.get(secret_page).content.decode()


def test_a_secret_rotated_again_before_its_page_loads_is_not_shown_as_mine(staff_client: Client, room: Room) -> None:
    subscription, secret_page = new_secret(staff_client, room, "rotated")
    mine = subscription.signing_secret
    newer = subscription.rotate_signing_secret()  # another operator, or the API, meanwhile

    page = staff_client.get(secret_page).content.decode()

    assert mine not in page and newer not in page
    assert "rotated again before this page could show it" in page
