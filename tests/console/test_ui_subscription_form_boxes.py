"""The subscription form's JSON boxes start empty (never `null`) and its payload filter is named once."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db


def textarea(html: str, name: str) -> str:
    return re.search(rf'<textarea name="{name}"[^>]*>(.*?)</textarea>', html, re.DOTALL).group(1).strip()


@pytest.mark.parametrize("page", ["new", "edit"])
def test_the_filter_and_sample_boxes_start_empty_when_unset(page: str, staff_client: Client) -> None:
    room = make_room()
    make_event_type(room)
    path = (f"/rooms/{room.pk}/subscriptions/new/" if page == "new"
            else f"/subscriptions/{make_subscription(room).pk}/edit/")

    html = staff_client.get(path).content.decode()

    assert textarea(html, "payload_filter") == "" and textarea(html, "sample_payload") == ""


def test_a_set_filter_is_shown_as_json(staff_client: Client) -> None:
    subscription = make_subscription(make_room(), payload_filter={"data": {"total": {"$gte": 100}}})
    html = staff_client.get(f"/subscriptions/{subscription.pk}/edit/").content.decode()
    assert "&quot;$gte&quot;: 100" in textarea(html, "payload_filter")


def test_the_words_payload_filter_appear_once_on_the_form(staff_client: Client) -> None:
    room = make_room()
    html = staff_client.get(f"/rooms/{room.pk}/subscriptions/new/").content.decode()
    named = re.findall(r">[^<]*filter[^<]*<", html, re.IGNORECASE)
    assert len([text for text in named if text.strip("><").strip() == "Payload filter"]) == 1, named
