"""The sequencing rules on the rows: what releases a held delivery, what parks a key, what expires."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from delivery import expiry, sequencing, settle
from delivery.models import Delivery
from subscriptions.models import Subscription
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


def key_rows(subscription: Subscription, statuses: list[str], key: str = "a", **message: object) -> list[Delivery]:
    room = subscription.room
    return [make_delivery(make_message(room, ordering_key=key, **message), subscription, status=status,
                          ordering_key=key) for status in statuses]


def statuses(rows: list[Delivery]) -> list[tuple[str, bool]]:
    return [(d.status, d.parks_key) for d in Delivery.objects.filter(pk__in=[r.pk for r in rows]).order_by("pk")]


@pytest.fixture
def ordered() -> Subscription:
    room = make_room()
    make_event_type(room)
    return make_subscription(room, type="pull", ordering="on")


def test_a_settlement_releases_only_the_oldest_held_delivery_of_its_key(ordered: Subscription) -> None:
    rows = key_rows(ordered, ["queued", "held", "held"])
    other = key_rows(ordered, ["queued", "held"], key="b")
    Delivery.objects.filter(pk=rows[0].pk).update(status="delivered")
    sequencing.settled([rows[0]])
    assert statuses(rows) == [("delivered", False), ("pending", False), ("held", False)]
    assert statuses(other) == [("queued", False), ("held", False)]  # another key waits for its own


def test_nothing_is_released_while_the_key_has_a_delivery_in_flight(ordered: Subscription) -> None:
    rows = key_rows(ordered, ["retrying", "held"])
    assert sequencing.release({(ordered.pk, "a")}) == []
    assert statuses(rows) == [("retrying", False), ("held", False)]


def test_a_dead_letter_parks_its_key_where_the_subscription_parks_and_moves_it_on_elsewhere(
    ordered: Subscription
) -> None:
    parking = make_subscription(ordered.room, type="pull", ordering="park")
    moving = key_rows(ordered, ["queued", "held"])
    parked = key_rows(parking, ["queued", "held"])
    for rows in (moving, parked):
        settle.dead_letter(Delivery.objects.get(pk=rows[0].pk), 0, "gave up")
    assert statuses(moving) == [("dead_lettered", False), ("pending", False)]
    assert statuses(parked) == [("dead_lettered", True), ("held", False)]
    assert sequencing.release_stalled() == 0  # a parked key is not stalled: it waits for an operator


def test_a_new_event_of_a_parked_key_is_held(ordered: Subscription) -> None:
    parking = make_subscription(ordered.room, type="pull", ordering="park")
    key_rows(parking, ["dead_lettered"])
    Delivery.objects.filter(subscription=parking).update(parks_key=True)
    new = Delivery(message=make_message(parking.room, ordering_key="a"), subscription=parking,
                   destination=parking.destination, ordering_key="a")
    sequencing.hold_behind([new])
    assert new.status == "held"


def test_the_safety_net_releases_a_key_left_with_held_events_and_nothing_in_flight(ordered: Subscription) -> None:
    rows = key_rows(ordered, ["delivered", "held", "held"])
    assert sequencing.release_stalled() == 1
    assert statuses(rows) == [("delivered", False), ("pending", False), ("held", False)]
    assert sequencing.release_stalled() == 0  # the key is busy again


def test_held_events_of_an_expired_message_expire_and_free_their_key(ordered: Subscription) -> None:
    past = timezone.now() - timedelta(seconds=1)
    expired = key_rows(ordered, ["queued", "held"], expires_at=past)
    waiting = key_rows(ordered, ["held"])
    expiry.expire_overdue()
    assert statuses(expired) == [("expired", False), ("expired", False)]
    assert statuses(waiting) == [("pending", False)]


def test_the_safety_net_counts_its_limit_in_keys_not_in_held_events(ordered: Subscription) -> None:
    others = [key_rows(ordered, ["delivered", "held"], key=key) for key in ("b", "c")]
    newest = key_rows(ordered, ["delivered", "held", "held", "held"])  # its held rows the newest of all
    assert sequencing.release_stalled(limit=2) == 2
    released = [rows for rows in (*others, newest) if statuses(rows)[1] == ("pending", False)]
    assert len(released) == 2, [statuses(rows) for rows in (*others, newest)]
