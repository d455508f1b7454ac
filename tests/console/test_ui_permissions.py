"""Every change the console makes needs its own Django permission; staff status only lets a user look.

The matrix below names, for every URL of the console, the permissions that let a staff user use it
(any one of them; none: any staff user). Each change is refused to a user holding every other
permission, and made by a user holding that one alone; a form's page and its fragments likewise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, reverse

from analytics.models import ReportRun
from console.urls import urlpatterns
from delivery.models import Delivery, Message
from rooms.models import ApiKey, EventType, Room
from subscriptions.models import Subscription
from tests.conftest import OPERATOR_PERMISSIONS
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db

StaffWith = Callable[..., User]

# Every console URL and what it needs beyond staff status (any one of the permissions named).
MATRIX: dict[str, tuple[str, ...]] = {
    "dashboard": (), "login": (), "logout": (), "favicon": (), "room-list": (), "room-detail": (),
    "room-create": ("rooms.add_room",),
    "room-edit": ("rooms.change_room",),
    "room-preview": ("rooms.add_room", "rooms.change_room"),
    "room-delete": ("rooms.delete_room",),
    "event-type-add": ("rooms.add_eventtype",),
    "subscription-list": (), "subscription-detail": (),
    "subscription-create": ("subscriptions.add_subscription",),
    "subscription-edit": ("subscriptions.change_subscription",),
    "subscription-preview": ("subscriptions.add_subscription", "subscriptions.change_subscription"),
    "subscription-filter-check": ("subscriptions.add_subscription", "subscriptions.change_subscription"),
    "subscription-pause": ("subscriptions.pause_subscription",),
    "subscription-resume": ("subscriptions.pause_subscription",),
    "subscription-rotate-secret": ("subscriptions.change_subscription",),
    "subscription-end-secret-overlap": ("subscriptions.change_subscription",),
    "subscription-secret": (),  # shows only what this session's own creation or rotation made
    "subscription-test-event": ("delivery.add_message",),
    "subscription-delete": ("subscriptions.delete_subscription",),
    "subscription-release-key": ("delivery.change_delivery",),
    "dead-letter-list": (), "dead-letter-index": (),
    "dead-letter-action": ("delivery.change_delivery", "delivery.delete_delivery"),  # replay; purge
    "message-list": (), "message-detail": (),
    "message-republish": ("delivery.change_delivery",),
    "reports": (),
    "reports-refresh": ("analytics.add_reportrun",),
    "api-key-list": ("rooms.add_apikey",),  # to mint; looking needs nothing
    "api-key-revoke": ("rooms.change_apikey",),
}

PUSH_FIELDS = {"type": "push", "delivery_delay_ms": "", "delivery_delay_multiplier": "", "delivery_attempts": "",
               "max_delivery_delay_ms": "", "max_in_flight": "10", "timeout_ms": "10000"}
ROOM_FIELDS = {"description": "", "delivery_delay_ms": "500", "delivery_delay_multiplier": "2",
               "delivery_attempts": "4", "max_delivery_delay_ms": "", "message_expiration_ms": "60000"}


@dataclass
class World:
    room: Room
    subscription: Subscription  # active, with a dead letter and a parked ordering key
    paused: Subscription  # paused, during a secret rotation's overlap
    dead: Delivery
    key: ApiKey
    lost: Delivery  # an unroutable message


@pytest.fixture
def world() -> World:
    room = make_room(name="orders")
    make_event_type(room)
    subscription = make_subscription(room, name="billing")
    paused = make_subscription(room, name="audit", status=Subscription.Status.PAUSED)
    paused.rotate_signing_secret()
    dead = make_delivery(make_message(room), subscription, status=Delivery.Status.DEAD_LETTERED)
    key, _ = ApiKey.issue("existing", rooms=[room])
    lost = Delivery.objects.create(message=make_message(room), destination="", status=Delivery.Status.UNROUTABLE)
    make_delivery(make_message(room, ordering_key="a"), subscription, status=Delivery.Status.DEAD_LETTERED,
                  ordering_key="a", parks_key=True)
    return World(room, subscription, paused, dead, key, lost)


@dataclass(frozen=True)
class Action:
    url: str  # the URL's name
    path: Callable[[World], str]
    data: dict


def sub(w: World) -> dict:
    return {"subscription_id": w.subscription.pk}


ACTIONS: dict[str, Action] = {
    "create a room": Action("room-create", lambda w: reverse("console:room-create"),
                            {**ROOM_FIELDS, "name": "payments"}),
    "change a room": Action("room-edit", lambda w: reverse("console:room-edit", args=[w.room.pk]),
                            {**ROOM_FIELDS, "name": "orders", "delivery_attempts": "0"}),
    "delete a room": Action("room-delete", lambda w: reverse("console:room-delete", args=[w.room.pk]), {}),
    "add an event type": Action("event-type-add", lambda w: reverse("console:event-type-add", args=[w.room.pk]),
                                {"name": "order.paid", "version": "1", "schema": ""}),
    "create a subscription": Action(
        "subscription-create", lambda w: reverse("console:subscription-create", args=[w.room.pk]),
        {**PUSH_FIELDS, "name": "shipping", "push_url": "http://127.0.0.1:9/hook"}),
    "change a subscription's push URL": Action(
        "subscription-edit", lambda w: reverse("console:subscription-edit", kwargs=sub(w)),
        {**PUSH_FIELDS, "name": "billing", "push_url": "http://127.0.0.1:9/somewhere-else"}),
    "pause a subscription": Action("subscription-pause",
                                   lambda w: reverse("console:subscription-pause", kwargs=sub(w)), {}),
    "resume a subscription": Action("subscription-resume",
                                    lambda w: reverse("console:subscription-resume", args=[w.paused.pk]), {}),
    "rotate a signing secret": Action("subscription-rotate-secret",
                                      lambda w: reverse("console:subscription-rotate-secret", kwargs=sub(w)),
                                      {"confirmed": "on", "overlap_hours": "1"}),
    "end a secret's overlap": Action(
        "subscription-end-secret-overlap",
        lambda w: reverse("console:subscription-end-secret-overlap", args=[w.paused.pk]), {}),
    "send a test event": Action("subscription-test-event",
                                lambda w: reverse("console:subscription-test-event", kwargs=sub(w)),
                                {"payload": '{"order": 1}', "correlation_id": ""}),
    "delete a subscription": Action("subscription-delete",
                                    lambda w: reverse("console:subscription-delete", kwargs=sub(w)), {}),
    "release a parked ordering key": Action("subscription-release-key",
                                            lambda w: reverse("console:subscription-release-key", kwargs=sub(w)),
                                            {"ordering_key": "a"}),
    "replay dead letters": Action("dead-letter-action",
                                  lambda w: reverse("console:dead-letter-action", kwargs=sub(w)),
                                  {"choice": "replay:all", "confirmed": "on"}),
    "purge dead letters": Action("dead-letter-action",
                                 lambda w: reverse("console:dead-letter-action", kwargs=sub(w)),
                                 {"choice": "purge:all", "confirmed": "on"}),
    "re-publish an unroutable message": Action(
        "message-republish", lambda w: reverse("console:message-republish", args=[w.lost.message_id]), {}),
    "ask for a report run": Action("reports-refresh", lambda w: reverse("console:reports-refresh"), {}),
    "mint an admin key": Action("api-key-list", lambda w: reverse("console:api-key-list"),
                                {"name": "root", "is_admin": "on"}),
    "revoke a key": Action("api-key-revoke", lambda w: reverse("console:api-key-revoke", args=[w.key.pk]), {}),
}
# The permission each action takes, where its URL takes either of two (the dead letters' replay or purge).
OWN_PERMISSION = {"replay dead letters": "delivery.change_delivery", "purge dead letters": "delivery.delete_delivery"}

# Pages that show a form of a change, and fragments of those pages: as protected as the change.
FORMS: dict[str, tuple[str, Callable[[World], str]]] = {
    "the new room form": ("GET", lambda w: reverse("console:room-create")),
    "a room's edit form": ("GET", lambda w: reverse("console:room-edit", args=[w.room.pk])),
    "the room form's schedule preview": ("POST", lambda w: reverse("console:room-preview")),
    "a room's delete confirmation": ("GET", lambda w: reverse("console:room-delete", args=[w.room.pk])),
    "the new subscription form": ("GET", lambda w: reverse("console:subscription-create", args=[w.room.pk])),
    "a subscription's edit form": ("GET", lambda w: reverse("console:subscription-edit", kwargs=sub(w))),
    "the subscription form's schedule preview": (
        "POST", lambda w: reverse("console:subscription-preview", args=[w.room.pk])),
    "the subscription form's filter check": (
        "POST", lambda w: reverse("console:subscription-filter-check", args=[w.room.pk])),
    "a subscription's delete confirmation": ("GET", lambda w: reverse("console:subscription-delete", kwargs=sub(w))),
    "the rotation's confirmation": ("GET", lambda w: reverse("console:subscription-rotate-secret", kwargs=sub(w))),
}
FORM_URLS = {"the new room form": "room-create", "a room's edit form": "room-edit",
             "the room form's schedule preview": "room-preview", "a room's delete confirmation": "room-delete",
             "the new subscription form": "subscription-create", "a subscription's edit form": "subscription-edit",
             "the subscription form's schedule preview": "subscription-preview",
             "the subscription form's filter check": "subscription-filter-check",
             "a subscription's delete confirmation": "subscription-delete",
             "the rotation's confirmation": "subscription-rotate-secret"}


def state() -> tuple:
    """Everything the console's changes touch, to compare before and after."""
    return (
        list(Room.objects.order_by("pk").values_list("name", "delivery_attempts")),
        EventType.objects.count(),
        list(Subscription.objects.order_by("pk").values_list("name", "status", "push_url", "signing_secret",
                                                             "previous_signing_secret", "previous_secret_until")),
        Message.objects.count(),
        list(Delivery.objects.order_by("pk").values_list("status", "purged_at", "parks_key", "replays")),
        list(ApiKey.objects.order_by("pk").values_list("pk", "revoked_at")),
        ReportRun.objects.count(),
    )


@pytest.fixture(autouse=True)
def no_report_task_left_on_the_broker() -> Iterator[None]:
    """Take the report task a refresh queues off the Celery broker: no later test's worker may start Spark for it."""
    yield
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete("celery")


def needed(action: str) -> str:
    if action in OWN_PERMISSION:
        return OWN_PERMISSION[action]
    (permission,) = MATRIX[ACTIONS[action].url]
    return permission


def every_permission_but(*left_out: str) -> list[str]:
    return [p for p in OPERATOR_PERMISSIONS if p not in left_out]


def test_every_console_url_is_in_the_matrix_and_every_change_is_tried() -> None:
    names = {pattern.name for pattern in urlpatterns if isinstance(pattern, URLPattern)}
    assert names == set(MATRIX)
    guarded = {name for name, permissions in MATRIX.items() if permissions}
    assert guarded == {a.url for a in ACTIONS.values()} | set(FORM_URLS.values())
    assert {p for permissions in MATRIX.values() for p in permissions} == set(OPERATOR_PERMISSIONS)


@pytest.mark.parametrize("action", ACTIONS)
def test_a_change_is_refused_to_a_staff_user_holding_every_other_permission(
        client: Client, staff_with: StaffWith, world: World, action: str) -> None:
    client.force_login(staff_with(*every_permission_but(*MATRIX[ACTIONS[action].url])))
    before = state()
    response = client.post(ACTIONS[action].path(world), ACTIONS[action].data)
    assert response.status_code == 403, response.content[:300]
    assert state() == before


@pytest.mark.parametrize("action", ACTIONS)
def test_a_staff_user_makes_a_change_with_its_own_permission_alone(
        client: Client, staff_with: StaffWith, world: World, action: str) -> None:
    client.force_login(staff_with(needed(action)))
    before = state()
    response = client.post(ACTIONS[action].path(world), ACTIONS[action].data)
    assert response.status_code in (200, 302), response.content[:300]
    assert state() != before


def test_the_dead_letters_replay_and_purge_need_each_their_own(client: Client, staff_with: StaffWith,
                                                               world: World) -> None:
    client.force_login(staff_with("delivery.change_delivery"))
    before = state()
    assert client.post(ACTIONS["purge dead letters"].path(world), ACTIONS["purge dead letters"].data).status_code == 403
    client.force_login(staff_with("delivery.delete_delivery"))
    assert client.post(ACTIONS["replay dead letters"].path(world),
                       ACTIONS["replay dead letters"].data).status_code == 403
    assert state() == before


@pytest.mark.parametrize("form", FORMS)
def test_a_form_and_its_fragments_are_as_protected_as_the_change(client: Client, staff_with: StaffWith,
                                                                world: World, form: str) -> None:
    method, path = FORMS[form]
    permissions = MATRIX[FORM_URLS[form]]
    ask = client.get if method == "GET" else client.post
    client.force_login(staff_with(*every_permission_but(*permissions)))
    assert ask(path(world), HTTP_HX_REQUEST="true").status_code == 403
    for permission in permissions:  # any one of them opens it
        client.force_login(staff_with(permission))
        assert ask(path(world)).status_code == 200, permission


def test_looking_needs_no_permission(client: Client, viewer: User, world: World) -> None:
    client.force_login(viewer)
    for name in ("room-list", "subscription-list", "api-key-list", "reports", "dead-letter-index"):
        assert client.get(reverse(f"console:{name}")).status_code == 200, name
    assert client.get(reverse("console:room-detail", args=[world.room.pk])).status_code == 200
    assert client.get(reverse("console:subscription-detail", kwargs=sub(world))).status_code == 200

