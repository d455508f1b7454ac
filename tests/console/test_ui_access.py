"""Every page, fragment and action of the web UI is for signed-in staff only."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from django.test import Client
from django.urls import reverse

from tests.ui_world import World, build_world

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db

Url = Callable[[World], str]


def url(name: str, **ids: Callable[[World], object]) -> Url:
    return lambda w: reverse(f"console:{name}", kwargs={k: get(w) for k, get in ids.items()})


ROOM = {"room_id": lambda w: w.room.pk}
SUBSCRIPTION = {"subscription_id": lambda w: w.push.pk}
PAGES: dict[str, Url] = {
    "dashboard": url("dashboard"),
    "room list": url("room-list"),
    "room create": url("room-create"),
    "room detail": url("room-detail", **ROOM),
    "room edit": url("room-edit", **ROOM),
    "room delete": url("room-delete", **ROOM),
    "subscription list": url("subscription-list"),
    "subscription create": url("subscription-create", **ROOM),
    "subscription detail": url("subscription-detail", **SUBSCRIPTION),
    "subscription edit": url("subscription-edit", **SUBSCRIPTION),
    "subscription delete": url("subscription-delete", **SUBSCRIPTION),
    "rotate secret confirmation": url("subscription-rotate-secret", **SUBSCRIPTION),
    "signing secret": url("subscription-secret", **SUBSCRIPTION),
    "message list": url("message-list"),
    "message detail": url("message-detail", message_id=lambda w: w.retrying.pk),
    "dead letter index": url("dead-letter-index"),
    "dead letter list": url("dead-letter-list", **SUBSCRIPTION),
    "api keys": url("api-key-list"),
    "reports": url("reports"),
}
# The htmx fragments: (page, the id of the element that asks for it).
FRAGMENTS: dict[str, tuple[Url, str]] = {
    "dashboard last hour": (url("dashboard"), "last-hour"),
    "dashboard failing": (url("dashboard"), "failing"),
    "message timeline": (url("message-detail", message_id=lambda w: w.retrying.pk), "destinations"),
    "reports figures": (url("reports"), "figures"),
    "reports progress": (url("reports"), "progress"),
}
ACTIONS: dict[str, Url] = {
    "room preview": url("room-preview"),
    "subscription preview": url("subscription-preview", **ROOM),
    "event type add": url("event-type-add", **ROOM),
    "pause": url("subscription-pause", **SUBSCRIPTION),
    "resume": url("subscription-resume", **SUBSCRIPTION),
    "rotate secret": url("subscription-rotate-secret", **SUBSCRIPTION),
    "test event": url("subscription-test-event", **SUBSCRIPTION),
    "dead letter action": url("dead-letter-action", **SUBSCRIPTION),
    "api key revoke": url("api-key-revoke", key_id=lambda w: w.key.pk),
    "room delete": url("room-delete", **ROOM),
    "subscription delete": url("subscription-delete", **SUBSCRIPTION),
    "reports refresh": url("reports-refresh"),
}
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def world() -> World:
    return build_world()


@pytest.mark.parametrize("name", PAGES)
def test_a_staff_user_sees_every_page(staff_client: Client, world: World, name: str) -> None:
    response = staff_client.get(PAGES[name](world))
    assert response.status_code == 200
    assert b'<nav class="sidebar"' in response.content


@pytest.mark.parametrize("name", PAGES)
def test_an_anonymous_visitor_is_sent_to_log_in(client: Client, world: World, name: str) -> None:
    path = PAGES[name](world)
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={path}"


@pytest.mark.parametrize("name", PAGES)
def test_a_user_without_staff_status_gets_403(client: Client, outsider: User, world: World, name: str) -> None:
    client.force_login(outsider)
    response = client.get(PAGES[name](world))
    assert response.status_code == 403
    assert b"operator console is for staff" in response.content


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_a_fragment_is_only_the_part_asked_for(staff_client: Client, world: World, fragment: str) -> None:
    page, target = FRAGMENTS[fragment]
    response = staff_client.get(page(world), HTTP_HX_TARGET=target, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith("<section") and f'id="{target}"' in html
    assert "<html" not in html and "sidebar" not in html
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_an_anonymous_fragment_request_sends_the_browser_to_log_in(client: Client, world: World,
                                                                    fragment: str) -> None:
    page, target = FRAGMENTS[fragment]
    response = client.get(page(world), HTTP_HX_TARGET=target, **HTMX)
    assert response.status_code == 200 and response.content == b""
    assert response["HX-Redirect"] == f"/login/?next={page(world)}"


def test_after_logging_in_from_a_fragment_the_browser_returns_to_its_page(client: Client, world: World) -> None:
    room_page = f"http://testserver/rooms/{world.room.pk}/edit/"
    response = client.post("/rooms/preview/", {}, HTTP_HX_CURRENT_URL=room_page, **HTMX)
    assert response["HX-Redirect"] == f"/login/?next=/rooms/{world.room.pk}/edit/"


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_a_fragment_is_forbidden_without_staff_status(client: Client, outsider: User, world: World,
                                                      fragment: str) -> None:
    client.force_login(outsider)
    page, target = FRAGMENTS[fragment]
    assert client.get(page(world), HTTP_HX_TARGET=target, **HTMX).status_code == 403


@pytest.mark.parametrize("action", ACTIONS)
def test_no_action_runs_for_an_anonymous_visitor(client: Client, world: World, action: str) -> None:
    response = client.post(ACTIONS[action](world), {"choice": "purge:all", "confirmed": "on"})
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    world.push.refresh_from_db()
    assert world.push.status == "active" and world.room.subscriptions.count() == 2
    assert world.dead.deliveries.get(subscription=world.push).purged_at is None


@pytest.mark.parametrize("action", ACTIONS)
def test_no_action_runs_without_staff_status(client: Client, outsider: User, world: World, action: str) -> None:
    client.force_login(outsider)
    response = client.post(ACTIONS[action](world), {"choice": "purge:all", "confirmed": "on"})
    assert response.status_code == 403
    world.push.refresh_from_db()
    assert world.push.status == "active" and world.room.subscriptions.count() == 2
    assert world.dead.deliveries.get(subscription=world.push).purged_at is None


def test_actions_refuse_get(staff_client: Client, world: World) -> None:
    for name in ("pause", "resume", "test event", "dead letter action", "api key revoke",
                 "reports refresh"):
        assert staff_client.get(ACTIONS[name](world)).status_code == 405, name


def test_actions_need_the_csrf_token(member: User, world: World) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.post(ACTIONS["pause"](world)).status_code == 403
    world.push.refresh_from_db()
    assert world.push.status == "active"


def test_a_staff_user_logs_in_with_a_password_and_lands_on_the_dashboard(client: Client, owner: User) -> None:
    page = client.get("/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    response = client.post("/login/", {"username": "owner", "password": "owner-pass-1"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_a_wrong_password_is_refused_with_a_message(client: Client, owner: User) -> None:
    response = client.post("/login/", {"username": "owner", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_logging_out_takes_a_post_and_ends_the_session(staff_client: Client) -> None:
    response = staff_client.post("/logout/")
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert staff_client.get("/").status_code == 302
