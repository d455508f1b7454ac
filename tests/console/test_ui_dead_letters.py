"""Dead letters in the web UI: per subscription, filtered, replayed or purged after a confirmation."""

from __future__ import annotations

import pytest
from django.test import Client

from delivery.models import Delivery
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


@pytest.fixture
def dead() -> list[Delivery]:
    """Three dead letters of one subscription (two timeouts, one 500) and one delivered message."""
    room = make_room()
    subscription = make_subscription(room, name="billing")
    rows = [make_delivery(make_message(room, correlation_id=f"dead-{n}"), subscription, status="dead_lettered",
                          attempts=3, last_error=error)
            for n, error in enumerate(["gave up: timed out", "gave up: HTTP 500", "gave up: timed out"])]
    make_delivery(make_message(room), subscription, status="delivered")
    return rows


def test_the_index_lists_subscriptions_with_dead_letters(staff_client: Client, dead: list[Delivery]) -> None:
    make_subscription(dead[0].subscription.room, name="healthy")
    page = staff_client.get("/dead-letters/").context["page"]
    assert [(s.name, s.dead_letters) for s in page] == [("billing", 3)]


def test_the_list_shows_and_filters_a_subscriptions_dead_letters(staff_client: Client, dead: list[Delivery]) -> None:
    url = f"/subscriptions/{dead[0].subscription_id}/dead-letters/"
    rows = staff_client.get(url).context["page"].rows
    assert [d.message.correlation_id for d in rows] == ["dead-2", "dead-1", "dead-0"]
    filtered = staff_client.get(f"{url}?error=HTTP+500").context["page"].rows
    assert [d.message.correlation_id for d in filtered] == ["dead-1"]


def test_replaying_the_selected_asks_for_confirmation_first(staff_client: Client, dead: list[Delivery]) -> None:
    url = f"/subscriptions/{dead[0].subscription_id}/dead-letters/action/"
    chosen = [str(dead[0].message_id), str(dead[2].message_id)]

    confirm = staff_client.post(url, {"choice": "replay:selected", "message_ids": chosen})

    html = confirm.content.decode()
    assert confirm.status_code == 200 and "Replay 2 dead letters?" in html
    assert all(f'name="message_ids" value="{m}"' in html for m in chosen)
    assert Delivery.objects.filter(status="dead_lettered").count() == 3

    done = staff_client.post(url, {"choice": "replay:selected", "message_ids": chosen, "confirmed": "on"})

    assert done.status_code == 302
    replayed = Delivery.objects.filter(pk__in=[dead[0].pk, dead[2].pk])
    assert {(d.status, d.attempts, d.replays) for d in replayed} == {("pending", 0, 1)}
    assert Delivery.objects.get(pk=dead[1].pk).status == "dead_lettered"
    assert "2 dead letters sent again" in staff_client.get(done["Location"]).content.decode()


def test_purging_all_takes_every_dead_letter_of_the_subscription(staff_client: Client, dead: list[Delivery]) -> None:
    url = f"/subscriptions/{dead[0].subscription_id}/dead-letters/action/"
    confirm = staff_client.post(url, {"choice": "purge:all"})
    assert "Purge 3 dead letters?" in confirm.content.decode()

    staff_client.post(url, {"choice": "purge:all", "confirmed": "on"})

    assert Delivery.objects.filter(status="dead_lettered", purged_at__isnull=False).count() == 3
    assert list(staff_client.get(f"/subscriptions/{dead[0].subscription_id}/dead-letters/").context["page"].rows) == []


def test_nothing_selected_is_refused_with_a_message(staff_client: Client, dead: list[Delivery]) -> None:
    url = f"/subscriptions/{dead[0].subscription_id}/dead-letters/action/"
    response = staff_client.post(url, {"choice": "replay:selected", "confirmed": "on"}, follow=True)
    assert "Select at least one dead letter" in response.content.decode()
    assert Delivery.objects.filter(status="dead_lettered").count() == 3


def test_ids_of_another_subscription_are_left_alone(staff_client: Client, dead: list[Delivery]) -> None:
    other = make_subscription(dead[0].subscription.room, name="other")
    url = f"/subscriptions/{other.pk}/dead-letters/action/"
    staff_client.post(url, {"choice": "purge:selected", "message_ids": [str(dead[0].message_id)], "confirmed": "on"})
    assert Delivery.objects.get(pk=dead[0].pk).purged_at is None
