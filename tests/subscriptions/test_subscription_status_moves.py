"""A subscription's status moves by compare-and-set: an operator's pause and a 410's disable that cross never
overwrite each other (issue 27: the last writer won)."""

from __future__ import annotations

import itertools

import pytest

from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db

GONE = "https://example.com/hook answered 410 Gone on 2026-11-26 21:00:00 UTC"


def test_a_pause_read_before_a_410_keeps_the_410s_reason() -> None:
    subscription = make_subscription(make_room())
    operators_view = Subscription.objects.get(pk=subscription.pk)  # the console read it active
    Subscription.objects.get(pk=subscription.pk).disable(GONE)  # meanwhile a worker's POST got 410
    operators_view.pause(by="by ann in the web UI")
    subscription.refresh_from_db()
    assert (subscription.status, subscription.status_reason) == (Subscription.Status.PAUSED, GONE)


def test_a_410_read_before_a_pause_disables_it() -> None:
    subscription = make_subscription(make_room())
    workers_view = Subscription.objects.get(pk=subscription.pk)
    Subscription.objects.get(pk=subscription.pk).pause(by="by ann in the web UI")
    workers_view.disable(GONE)
    subscription.refresh_from_db()
    assert (subscription.status, subscription.status_reason) == (Subscription.Status.DISABLED, GONE)


def test_every_status_move_changes_the_rooms_routing_and_a_move_to_where_it_is_changes_nothing() -> None:
    subscription = make_subscription(make_room())
    versions = [Room.objects.get(pk=subscription.room_id).routing_version]
    for move in (lambda: subscription.pause(by="by ann"), lambda: subscription.pause(by="by bob"),
                 subscription.resume, subscription.resume, lambda: subscription.disable(GONE)):
        move()
        versions.append(Room.objects.get(pk=subscription.room_id).routing_version)
    assert [b - a for a, b in itertools.pairwise(versions)] == [1, 0, 1, 0, 1]
    assert subscription.status_reason == GONE
