"""What an operator sees at a glance, in a real browser: a tripped breaker on every list, dashboard figures that
agree with their chart, a messages list of one line per row, durations and ratios in words."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from subscriptions.models import Subscription
from tests.browser.conftest import Browsing
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription
from tests.ui_world import add_attempt

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def signed_in(browsing: Browsing, owner: User) -> Browsing:
    browsing.log_in("owner", "owner-pass-1")
    return browsing


def test_an_open_breaker_shows_on_every_list_of_subscriptions(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    billing = make_subscription(room, name="billing")
    make_delivery(make_message(room), billing, status="dead_lettered", last_error="gave up after 3 attempts")
    add_attempt(make_delivery(make_message(room), billing, status="retrying"), 1, "failure", 503, "HTTP 503")
    billing.move_breaker(Subscription.Breaker.OPEN, "5 consecutive attempts failed, the last: HTTP 503",
                         now=timezone.now())
    page = signed_in.page

    for path, rows in (("/", "#failing tbody tr"), ("/subscriptions/", "main table tbody tr"),
                       ("/dead-letters/", "main table tbody tr"), (f"/rooms/{room.pk}/", "#subscriptions tbody tr")):
        signed_in.goto(path)
        status = page.locator(rows, has_text="billing").locator(".subscription-status")
        expect(status).to_contain_text("active")
        expect(status.get_by_text("breaker open")).to_be_visible()
        expect(status.get_by_text("breaker open")).to_have_attribute(
            "title", "5 consecutive attempts failed, the last: HTTP 503")


def test_the_dashboards_cards_and_chart_legend_agree_and_move_together(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    billing = make_subscription(room, name="billing")
    for n in range(7):
        make_delivery(make_message(room), billing, status="delivered" if n < 5 else "retrying")
    page = signed_in.page
    published, delivered = page.locator("[data-stat=published]"), page.locator("[data-stat=delivered]")
    legend = page.locator("#throughput .legend")

    expect(published).to_have_text("7")
    expect(delivered).to_have_text("5")
    expect(legend).to_contain_text("published (7)")
    expect(legend).to_contain_text("delivered (5)")

    for _ in range(4):  # more arrive: the next poll brings the cards and the chart at once
        make_delivery(make_message(room), billing, status="delivered")
    expect(published).to_have_text("11", timeout=30_000)
    figures = page.locator("#last-hour").evaluate(
        "e => [e.querySelector('[data-stat=published]').textContent, e.querySelector('[data-stat=delivered]')"
        ".textContent, e.querySelector('#throughput .legend').textContent]")
    assert figures[:2] == ["11", "9"] and "published (11)" in figures[2] and "delivered (9)" in figures[2], figures


def test_the_messages_list_keeps_each_row_on_one_line(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    billing = make_subscription(room, name="billing-with-a-rather-long-subscription-name")
    long_id = "checkout-session-7f3c2a9e-5b1d-4c8e-a0f2-9d6b3e1c4a7f-customer-000000123456-retry"
    for n in range(30):
        make_delivery(make_message(room, correlation_id=f"{long_id}-{n}", event_type="order.created.with.details"),
                      billing, status="dead_lettered", last_error="gave up after 5 attempts: HTTP 503: " + "down " * 40)
    page = signed_in.page

    signed_in.goto("/messages/")

    rows = page.locator("table.log tbody tr")
    expect(rows).to_have_count(30)
    heights = rows.evaluate_all("rs => rs.map(r => r.getBoundingClientRect().height)")
    line = page.locator("table.log thead th").first.evaluate("e => e.getBoundingClientRect().height")
    assert max(heights) <= line * 1.5, (max(heights), line)  # one line each, as tall as the header row
    cell = rows.first.locator("td").nth(1)
    assert cell.get_attribute("title").startswith(long_id)
    assert cell.evaluate("e => e.scrollWidth > e.clientWidth"), "the id is cut (with an ellipsis), not wrapped"


def test_the_breaker_settings_read_in_days_and_percent(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    make_event_type(room)
    billing = make_subscription(room, name="billing", breaker_failure_ratio=0.5, breaker_window_s=300,
                                breaker_disable_after_s=432_000)
    page = signed_in.page

    signed_in.goto(f"/subscriptions/{billing.pk}/")

    breaker = page.locator("#breaker")
    expect(breaker).to_contain_text("or 50% of the attempts in 5 min failed")
    expect(page.locator("#breaker-disables-after")).to_contain_text("5 days open")
    expect(breaker).not_to_contain_text("432000")
