"""The message log in the web UI: filters, search, pages, and a message's live attempt timeline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery, Message
from tests.factories import make_delivery, make_message, make_room, make_subscription
from tests.ui_world import World, build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> World:
    return build_world()


def listed(client: Client, query: str = "") -> list[tuple[str, str]]:
    """Return (correlation id, subscription name) of each row the log shows for `query`."""
    response = client.get(f"/messages/?{query}")
    assert response.status_code == 200
    return [(d.message.correlation_id, d.subscription.name) for d in response.context["page"].rows]


def test_the_log_shows_one_row_per_destination_newest_first(staff_client: Client, world: World) -> None:
    assert listed(staff_client) == [("order-3", "billing"), ("order-2", "billing"), ("order-1", "warehouse"),
                                     ("order-1", "billing")]


@pytest.mark.parametrize(("query", "expected"), [
    ("status=dead_lettered", [("order-2", "billing")]),
    ("status=retrying", [("order-3", "billing")]),
    ("event_type=order.created&status=acked", [("order-1", "warehouse")]),
    ("q=order-1", [("order-1", "warehouse"), ("order-1", "billing")]),
    ("q=nobody", []),
])
def test_the_log_filters_and_searches(staff_client: Client, world: World, query: str, expected: list) -> None:
    assert listed(staff_client, query) == expected


def test_the_log_filters_by_room_and_subscription(staff_client: Client, world: World) -> None:
    other = make_room()
    make_delivery(make_message(other, correlation_id="elsewhere"), make_subscription(other, name="x"))
    assert {c for c, _ in listed(staff_client, f"room={other.pk}")} == {"elsewhere"}
    assert {s for _, s in listed(staff_client, f"subscription={world.pull.pk}")} == {"warehouse"}


def test_a_message_id_finds_its_message(staff_client: Client, world: World) -> None:
    assert listed(staff_client, f"q={world.dead.pk}") == [("order-2", "billing")]


def test_the_log_filters_by_time(staff_client: Client, world: World) -> None:
    old = make_message(world.room, correlation_id="last-week", created_at=timezone.now() - timedelta(days=7))
    Delivery.objects.create(message=old, subscription=world.push, destination="d",
                            created_at=old.created_at, status="delivered")
    since = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    until = (timezone.now() - timedelta(days=6)).strftime("%Y-%m-%dT%H:%M")
    assert "last-week" not in {c for c, _ in listed(staff_client, f"since={since}")}
    assert {c for c, _ in listed(staff_client, f"until={until}")} == {"last-week"}


def test_a_bad_filter_is_named_and_the_rest_still_apply(staff_client: Client, world: World) -> None:
    response = staff_client.get("/messages/?status=lost&since=yesterday")
    html = response.content.decode()
    assert "Select a valid choice. lost is not one of the available choices." in html
    assert "From (UTC): Enter a valid date/time." in html


def test_the_log_pages_by_id_in_both_directions(staff_client: Client) -> None:
    room = make_room()
    subscription = make_subscription(room)
    for n in range(120):
        make_delivery(make_message(room, correlation_id=f"m-{n:03d}"), subscription)

    first = staff_client.get("/messages/").context["page"]
    second = staff_client.get(f"/messages/?before={first.older}").context["page"]
    third = staff_client.get(f"/messages/?before={second.older}").context["page"]
    back = staff_client.get(f"/messages/?after={third.newer}").context["page"]

    names = [[d.message.correlation_id for d in page.rows] for page in (first, second, third, back)]
    assert names[0][0] == "m-119" and names[0][-1] == "m-070" and first.newer is None
    assert names[1][0] == "m-069" and names[1][-1] == "m-020"
    assert names[2] == [f"m-{n:03d}" for n in range(19, -1, -1)] and third.older is None
    assert names[3] == names[1]


def test_a_message_page_shows_the_payload_and_each_timeline(staff_client: Client, world: World) -> None:
    response = staff_client.get(f"/messages/{world.delivered.pk}/")

    html = response.content.decode()
    assert '&quot;order&quot;: 1' in html and "order-1" in html
    assert html.count('data-outcome="failure"') == 1 and html.count('data-outcome="success"') == 1
    assert "<td class=\"num\">2 s</td>" in html and "HTTP 500" in html
    assert response.context["settled"] is True and 'hx-trigger="every' not in html


def test_a_message_still_on_its_way_polls_its_timeline(staff_client: Client, world: World) -> None:
    html = staff_client.get(f"/messages/{world.retrying.pk}/").content.decode()
    assert f'hx-get="/messages/{world.retrying.pk}/" hx-trigger="every 1s"' in html
    assert "timed out after 10000 ms" in html


def test_the_timeline_fragment_stops_polling_once_every_destination_is_final(staff_client: Client,
                                                                            world: World) -> None:
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "destinations"}
    assert b"hx-trigger" in staff_client.get(f"/messages/{world.retrying.pk}/", **headers).content
    Delivery.objects.filter(message=world.retrying).update(status="delivered")

    fragment = staff_client.get(f"/messages/{world.retrying.pk}/", **headers).content.decode()

    assert fragment.lstrip().startswith('<section id="destinations"') and "hx-trigger" not in fragment
    assert 'data-settled="true"' in fragment


def test_an_unknown_message_is_404(staff_client: Client) -> None:
    assert staff_client.get("/messages/00000000-0000-0000-0000-000000000000/").status_code == 404
    assert Message.objects.count() == 0
