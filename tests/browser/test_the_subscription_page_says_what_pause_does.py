"""The subscription page says, beside the Pause button, that pausing holds events, and once paused how many wait."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_page_says_pause_holds_events_and_counts_what_waits(browsing: Browsing, owner: User) -> None:
    room = make_room(name="orders")
    make_event_type(room)
    subscription = make_subscription(room, name="billing")
    for status in ("queued", "retrying", "delivered"):
        make_delivery(make_message(room), subscription, status=status)
    browsing.log_in("owner", "owner-pass-1")
    page = browsing.page
    browsing.goto(f"/subscriptions/{subscription.pk}/")
    expect(page.locator("#pause-note")).to_contain_text("Pausing holds events: what is published meanwhile is kept")

    page.get_by_role("button", name="Pause").click()

    expect(page.locator("h1 .badge")).to_have_text("paused")
    expect(page.locator("#pause-note")).to_have_text(
        "2 events wait for this subscription: resuming delivers them in publish order (the room's expiration "
        "still applies).")
    expect(page.locator("#waiting-count")).to_have_text("2")
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
