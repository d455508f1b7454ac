"""The operator's journeys in a real browser, against a real Celery worker, broker and webhook receiver."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Browser, expect
from pytest_django.live_server_helper import LiveServer

from delivery.models import Delivery
from delivery.publish import Event, publish
from tests.browser.conftest import VIEWPORT, Browsing
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, failing_then
from tests.workers import WorkerProcess

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_an_operator_sets_up_a_push_subscription_and_watches_a_retry_succeed(
    browsing: Browsing, owner: User, receiver: Receiver, start_worker: Callable[..., WorkerProcess],
) -> None:
    start_worker()
    hook = receiver.script("/flaky", failing_then(1))
    page = browsing.page
    browsing.log_in("owner", "owner-pass-1")

    page.locator("nav.sidebar").get_by_role("link", name="Rooms").click()
    page.get_by_role("link", name="New room").click()
    page.get_by_label("Name").fill("orders")
    page.get_by_label("Delay (ms)", exact=True).fill("300")
    page.get_by_label("Multiplier").fill("1")
    page.get_by_label("Redeliveries").fill("3")
    expect(page.locator("#schedule")).to_contain_text("+900 ms")  # the preview follows the fields
    page.get_by_role("button", name="Create room").click()
    expect(page.locator("h1")).to_have_text("orders")

    page.get_by_label("Name").fill("order.created")
    page.get_by_role("button", name="Add event type").click()
    expect(page.locator("#event-types table")).to_contain_text("order.created")

    page.get_by_role("link", name="New subscription").click()
    page.get_by_label("Name").fill("billing")
    page.get_by_label("Push URL").fill(hook)
    page.get_by_role("button", name="Create subscription").click()
    expect(page.locator("#secret")).to_contain_text("whsec_")
    page.get_by_role("link", name="I have copied it").click()
    expect(page.locator("h1")).to_contain_text("billing")

    correlation_id = f"journey-{uuid.uuid4().hex[:8]}"
    page.get_by_label("Correlation id").fill(correlation_id)
    page.get_by_role("button", name="Send test event").click()

    expect(page.locator("#correlation-id")).to_have_text(correlation_id)
    timeline = page.locator("#destinations")
    expect(timeline.locator("tr[data-outcome=failure]")).to_contain_text("500")
    expect(timeline.locator("tr[data-outcome=success]")).to_contain_text("204")
    expect(timeline).to_have_attribute("data-settled", "true")
    expect(timeline.locator(".destination .badge").first).to_have_text("delivered")
    assert [r.headers["X-Delivery-Attempt"] for r in receiver.requests("/flaky")] == ["1", "2"]

    page.locator("nav.sidebar").get_by_role("link", name="Messages").click()
    page.get_by_label("Correlation or message id").fill(correlation_id)
    page.get_by_role("button", name="Search").click()
    rows = page.locator("table.log tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("delivered")
    rows.first.get_by_role("link").first.click()
    expect(page.locator("#correlation-id")).to_have_text(correlation_id)


def test_an_operator_replays_a_dead_letter_and_it_is_delivered(
    browsing: Browsing, owner: User, receiver: Receiver, start_worker: Callable[..., WorkerProcess],
) -> None:
    start_worker()
    room = make_room(name="payments", delivery_attempts=0)
    make_event_type(room)
    make_subscription(room, name="ledger", push_url=receiver.script("/ledger", failing_then(1)))
    message_id = publish(room, Event("order.created", "1", {"order": 7}, correlation_id="replay-me")).message_id
    wait_for_status(message_id, "dead_lettered")
    page = browsing.page
    browsing.log_in("owner", "owner-pass-1")

    page.locator("nav.sidebar").get_by_role("link", name="Dead letters").click()
    page.get_by_role("link", name="ledger").click()
    page.get_by_label(f"Select {message_id}").check()
    page.get_by_role("button", name="Replay selected").click()
    expect(page.locator("h1")).to_have_text("Replay 1 dead letter?")
    page.get_by_role("button", name="Yes, replay 1").click()
    expect(page.locator(".flash")).to_contain_text("1 dead letter sent again")

    browsing.goto(f"/messages/{message_id}/")
    timeline = page.locator("#destinations")
    expect(timeline).to_have_attribute("data-settled", "true")
    expect(timeline.locator("tr[data-outcome=success] td").first).to_have_text("2")  # the second life
    assert Delivery.objects.get(message_id=message_id).status == "delivered"


def test_pages_read_and_forms_work_without_javascript(browser: Browser, live_server: LiveServer, owner: User) -> None:
    room = make_room(name="orders")
    subscription = make_subscription(room, name="billing")
    context = browser.new_context(java_script_enabled=False, viewport=VIEWPORT)
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill("owner")
        page.get_by_label("Password").fill("owner-pass-1")
        page.get_by_role("button", name="Log in").click()
        expect(page.locator("#stats")).to_contain_text("Published")
        page.goto(f"{live_server.url}/subscriptions/{subscription.pk}/")
        page.get_by_role("button", name="Pause").click()
        expect(page.locator("h1 .badge")).to_have_text("paused")
        page.goto(f"{live_server.url}/rooms/{room.pk}/subscriptions/new/")
        page.get_by_label("Name").fill("warehouse")
        page.get_by_label("Pull").check()
        expect(page.get_by_label("Push URL")).to_be_hidden()  # CSS alone hides what pull does not use
        page.get_by_role("button", name="Create subscription").click()
        expect(page.locator("h1")).to_contain_text("warehouse")
    finally:
        context.close()


def wait_for_status(message_id: str, status: str, timeout: float = 20.0) -> Delivery:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        delivery = Delivery.objects.get(message_id=message_id)
        if delivery.status == status:
            return delivery
        time.sleep(0.1)
    raise AssertionError(f"delivery is {delivery.status!r} after {timeout} s, not {status!r}")
