"""Routing in a real browser: the payload filter's live check, and an unroutable message found and re-published."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect

from delivery.models import Delivery
from delivery.publish import Event, publish
from subscriptions.models import Subscription
from tests.browser.conftest import Browsing
from tests.factories import make_event_type, make_room, make_subscription

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_filter_field_says_live_whether_a_sample_event_would_match(browsing: Browsing, owner: User) -> None:
    room = make_room(name="orders")
    make_event_type(room)
    browsing.log_in("owner", "owner-pass-1")
    browsing.goto(f"/rooms/{room.pk}/subscriptions/new/")
    page = browsing.page
    check = page.locator("#filter-check")

    page.get_by_label("Name").fill("big-orders")
    page.get_by_label("Pull").check()
    page.get_by_label("Filter (JSON)").fill('{"data": {"total": {"$gte": 100}}}')
    page.get_by_label("Sample payload").fill('{"total": 120}')
    expect(check).to_have_attribute("data-verdict", "match")
    page.get_by_label("Sample payload").fill('{"total": 80}')
    expect(check).to_have_attribute("data-verdict", "no-match")
    page.get_by_label("Filter (JSON)").fill('{"data": {"total": {"$gte": true}}}')
    expect(check).to_contain_text("$.data.total.$gte: $gte takes a number or a string, not a boolean")

    page.get_by_label("Filter (JSON)").fill('{"data": {"total": {"$gte": 100}}}')
    page.get_by_role("button", name="Create subscription").click()
    expect(page.locator("#payload-filter")).to_contain_text('"$gte": 100')
    assert Subscription.objects.get(name="big-orders").payload_filter == {"data": {"total": {"$gte": 100}}}


def test_an_unroutable_message_is_found_by_correlation_id_and_re_published(browsing: Browsing, owner: User) -> None:
    room = make_room(name="orders")
    make_event_type(room)
    published = publish(room, Event("order.created", "1", {"total": 5}, correlation_id="lost-order-5"))
    browsing.log_in("owner", "owner-pass-1")
    page = browsing.page

    expect(page.locator('[data-stat="unroutable"]')).to_have_text("1")
    page.locator("nav.sidebar").get_by_role("link", name="Messages").click()
    page.get_by_label("Correlation or message id").fill("lost-order-5")
    page.get_by_label("Correlation or message id").press("Enter")
    expect(page.locator("table tbody tr")).to_have_count(1)
    expect(page.locator("table tbody")).to_contain_text("unroutable")

    subscription = make_subscription(room, type="pull")
    browsing.goto(f"/messages/{published.message_id}/")
    page.get_by_role("button", name="Re-publish").click()
    expect(page.locator("body")).to_contain_text("Re-published to 1 destination.")
    assert Delivery.objects.get(message_id=published.message_id).subscription_id == subscription.pk
