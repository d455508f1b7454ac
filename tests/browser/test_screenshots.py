"""Every page in a real browser with a working day's data: it renders without a console error.

With SCREENSHOTS=1 (`make screenshots`) each page is saved to docs/screenshots/ at 1280×800.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.scenery import build_scenery

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_page_renders_in_the_browser(browsing: Browsing, owner: User) -> None:
    scenery = build_scenery()
    page = browsing.page
    browsing.goto("/login/")
    browsing.screenshot("login")
    browsing.log_in("owner", "owner-pass-1")
    expect(page.locator("#stats [data-stat=published]")).to_have_text("240")
    expect(page.locator("#failing")).to_contain_text("crm-sync")
    browsing.screenshot("dashboard")

    visits = [
        ("/rooms/", "Rooms", "rooms"),
        (f"/rooms/{scenery.orders.pk}/", "orders", "room-detail"),
        (f"/rooms/{scenery.orders.pk}/edit/", "Edit room orders", "room-edit"),
        ("/subscriptions/", "Subscriptions", "subscriptions"),
        (f"/subscriptions/{scenery.crm.pk}/", "crm-sync", "subscription-detail"),
        (f"/subscriptions/{scenery.billing.pk}/edit/", "Edit subscription billing", "subscription-edit"),
        ("/messages/", "Messages", "messages"),
        (f"/messages/{scenery.retrying.pk}/", str(scenery.retrying.pk), "message-detail"),
        ("/dead-letters/", "Dead letters", "dead-letters"),
        (f"/subscriptions/{scenery.crm.pk}/dead-letters/", "crm-sync", "dead-letter-list"),
        ("/api-keys/", "API keys", "api-keys"),
        ("/reports/", "Reports", "reports"),
    ]
    for path, heading, name in visits:
        browsing.goto(path)
        expect(page.locator("h1")).to_contain_text(heading)
        browsing.screenshot(name)
    page.locator("#latency").evaluate("element => element.scrollIntoView()")
    browsing.screenshot("reports-charts")

    browsing.goto(f"/subscriptions/{scenery.crm.pk}/dead-letters/")
    page.locator("input[name=message_ids]").nth(0).check()
    page.locator("input[name=message_ids]").nth(1).check()
    page.get_by_role("button", name="Replay selected").click()
    expect(page.locator("h1")).to_have_text("Replay 2 dead letters?")
    browsing.screenshot("dead-letter-confirm")

    browsing.goto(f"/rooms/{scenery.orders.pk}/subscriptions/new/")
    page.get_by_label("Name").fill("audit-log")
    page.get_by_label("Push URL").fill("https://audit.example.com/hook")
    page.get_by_label("Delay (ms)", exact=True).fill("60000")
    page.get_by_label("Multiplier").fill("3")
    page.get_by_label("Longest delay (ms)").fill("1800000")
    page.get_by_label("Redeliveries").fill("8")
    expect(page.locator("#schedule .outcome")).to_contain_text("expires")
    browsing.screenshot("subscription-new")
