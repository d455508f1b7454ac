"""A change of deliveries named by id (DeliveryQuerySet.update locks them by id, then tests the locked rows)
changes exactly the rows every one of the query's conditions holds for, as the plain UPDATE would."""

from __future__ import annotations

import pytest
from django.db.models import F
from django.utils import timezone

from delivery.models import Delivery
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


@pytest.fixture
def deliveries() -> list[Delivery]:
    """Four deliveries of one subscription: queued, retrying (attempt 2), delivered, leased."""
    room = make_room()
    subscription = make_subscription(room)
    statuses = [Delivery.Status.QUEUED, Delivery.Status.RETRYING, Delivery.Status.DELIVERED, Delivery.Status.LEASED]
    return [make_delivery(make_message(room), subscription, status=status, attempts=2 if i == 1 else 1)
            for i, status in enumerate(statuses)]


def states(deliveries: list[Delivery]) -> list[tuple[str, int]]:
    by_id = {pk: (status, attempts) for pk, status, attempts in
             Delivery.objects.filter(pk__in=[d.pk for d in deliveries]).values_list("pk", "status", "attempts")}
    return [by_id[d.pk] for d in deliveries]


def test_the_other_conditions_hold_for_the_rows_as_locked(deliveries: list[Delivery]) -> None:
    ids = [d.pk for d in deliveries]
    assert Delivery.objects.filter(pk__in=ids).claim_attempt(2, timezone.now()) == 2  # unsettled, attempts < 2
    assert states(deliveries) == [("queued", 2), ("retrying", 2), ("delivered", 1), ("leased", 2)]


def test_two_sets_of_ids_change_the_rows_in_both(deliveries: list[Delivery]) -> None:
    ids = [d.pk for d in deliveries]
    changed = Delivery.objects.filter(pk__in=ids[:3]).filter(pk__in=ids[1:]).update(attempts=F("attempts") + 5)
    assert changed == 2
    assert [attempts for _, attempts in states(deliveries)] == [1, 7, 6, 1]


def test_one_id_and_ids_as_a_set_or_an_array(deliveries: list[Delivery]) -> None:
    now = timezone.now()
    assert Delivery.objects.filter(pk=deliveries[2].pk).mark_delivered(200, now) == 0  # already delivered
    assert Delivery.objects.filter(pk=deliveries[0].pk).mark_delivered(200, now) == 1
    assert Delivery.objects.filter(pk__any_of={d.pk for d in deliveries}).unsettled().mark_held(now, now) == 2
    assert [status for status, _ in states(deliveries)] == ["delivered", "retrying", "delivered", "leased"]


def test_no_ids_or_no_possible_row_change_nothing(deliveries: list[Delivery]) -> None:
    assert Delivery.objects.filter(pk__in=[]).mark_delivered(200, timezone.now()) == 0
    assert Delivery.objects.filter(pk__in=[d.pk for d in deliveries], status__in=[]).update(attempts=9) == 0
    assert [attempts for _, attempts in states(deliveries)] == [1, 2, 1, 1]


def test_rows_not_named_by_id_are_changed_as_before(deliveries: list[Delivery]) -> None:
    subscription_id = deliveries[0].subscription_id
    assert Delivery.objects.filter(subscription_id=subscription_id).mark_dead_lettered("gone", timezone.now()) == 3
    assert Delivery.objects.exclude(pk=deliveries[0].pk).filter(status="dead_lettered").count() == 2


def test_nothing_to_change_changes_nothing(deliveries: list[Delivery]) -> None:
    assert Delivery.objects.filter(pk=deliveries[0].pk).update() == 0

