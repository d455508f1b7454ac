"""An operator's polish, in a real browser: error summaries, who paused what, a confirmed secret rotation that
survives a reload, the demo's Reports page, layouts that fit, words that agree with their numbers, a test event
for one subscription, and a timeline that stops polling when only a pull consumer can move it on."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING
from unittest import mock

import pytest
from django.utils import timezone
from playwright.sync_api import Request, expect

from delivery.broker.memory import reset_hub
from delivery.broker.shared import close_shared_broker
from delivery.models import Delivery, Message
from subscriptions.models import Subscription
from tests.browser.conftest import VIEWPORT, Browsing
from tests.browser.scenery import build_scenery
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def memory_broker(settings) -> Iterator[None]:
    """Publishes from these pages go to an in-memory broker of their own (the live server shares this process)."""
    name = f"polish-{uuid.uuid4().hex}"
    settings.STOMP_URL = f"memory://{name}"
    yield
    close_shared_broker()
    reset_hub(name)


@pytest.fixture
def signed_in(browsing: Browsing, owner: User) -> Browsing:
    browsing.log_in("owner", "owner-pass-1")
    return browsing


def test_error_cells_show_a_short_summary_and_the_full_text_on_demand(browsing: Browsing, owner: User) -> None:
    scenery = build_scenery()
    page = browsing.page
    browsing.log_in("owner", "owner-pass-1")
    summary = "HTTP 503: Service Unavailable · The server is temporarily unable to service your request"

    failing = page.locator("#failing tbody tr", has_text="crm-sync")
    expect(failing.locator(".error-detail summary")).to_contain_text(summary)
    assert "Apache/2.4.62" not in failing.locator("summary").inner_text()  # the rest is folded away

    browsing.goto(f"/messages/{scenery.retrying.pk}/")
    cell = page.locator("#destinations tr[data-outcome=failure] .error-detail")
    expect(cell.locator("summary")).to_contain_text(summary)
    expect(cell.locator("pre")).to_be_hidden()
    cell.locator("summary").click()
    expect(cell.locator("pre")).to_be_visible()
    expect(cell.locator("pre")).to_contain_text("Apache/2.4.62 (Debian) Server at crm.example.com Port 443")
    assert "DOCTYPE" not in cell.locator("pre").inner_text()  # the receiver's words, not its page
    browsing.screenshot("message-detail-error")

    browsing.goto(f"/messages/?subscription={scenery.crm.pk}&status=dead_lettered")
    row = page.locator("table.log tbody tr").first
    expect(row.locator(".error-detail summary")).to_contain_text("gave up after 3 attempts: HTTP 503: Service Unavai")
    assert all(len(text) <= 90 for text in page.locator("table.log .error-detail summary").all_inner_texts())
    assert "<html>" not in row.inner_text()


def test_pausing_from_the_ui_says_who_paused_it_where_and_when(signed_in: Browsing) -> None:
    subscription = make_subscription(make_room(name="orders"), name="billing")
    page = signed_in.page
    signed_in.goto(f"/subscriptions/{subscription.pk}/")

    page.get_by_role("button", name="Pause").click()

    expect(page.locator("h1 .badge")).to_have_text("paused")
    reason = page.locator("#status-reason")
    expect(reason).to_have_text(re.compile(r"^paused by owner in the web UI on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))
    when = timezone.now().strftime("%Y-%m-%d %H:%M")
    expect(reason).to_contain_text(when[:-1])  # the UI's own format, in UTC: no ISO "T" or offset
    signed_in.screenshot("subscription-paused")


def test_rotating_a_signing_secret_asks_first_and_says_how_long_the_old_one_still_signs(signed_in: Browsing) -> None:
    subscription = make_subscription(make_room(name="orders"), name="billing")
    old = subscription.signing_secret
    page = signed_in.page
    signed_in.goto(f"/subscriptions/{subscription.pk}/")

    page.get_by_role("link", name="Rotate…").click()
    expect(page.locator("h1")).to_have_text("Rotate the signing secret of billing?")
    expect(page.locator("#rotate-warning")).to_contain_text("the old secret signs them too")
    signed_in.screenshot("subscription-rotate-confirm")
    page.get_by_role("link", name="Cancel").click()
    expect(page.locator("h1")).to_contain_text("billing")
    subscription.refresh_from_db()
    assert subscription.signing_secret == old  # nothing happened without the confirmation

    page.get_by_role("link", name="Rotate…").click()
    page.get_by_role("button", name="Yes, rotate the secret").click()
    subscription.refresh_from_db()
    assert subscription.signing_secret != old
    expect(page.locator("#secret")).to_have_text(subscription.signing_secret)
    expect(page.locator("#overlap")).to_contain_text("with the old one too until")
    assert page.url.endswith(f"/subscriptions/{subscription.pk}/secret/")  # a GET: a reload re-posts nothing
    signed_in.screenshot("subscription-secret")

    rotated = subscription.signing_secret
    page.reload()
    expect(page.locator("#secret-gone")).to_contain_text("shown once")
    expect(page.locator("body")).not_to_contain_text(rotated)
    subscription.refresh_from_db()
    assert subscription.signing_secret == rotated  # rotated once: the reload did not rotate it again


def test_creating_a_push_subscription_then_reloading_its_secret_page_repeats_nothing(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    page = signed_in.page
    signed_in.goto(f"/rooms/{room.pk}/subscriptions/new/")
    page.get_by_label("Name").fill("billing")
    page.get_by_label("Push URL").fill("http://127.0.0.1:9/hook")
    page.get_by_role("button", name="Create subscription").click()
    expect(page.locator("#secret")).to_contain_text("whsec_")
    subscription = Subscription.objects.get(room=room, name="billing")
    expect(page.locator("#secret")).to_have_text(subscription.signing_secret)

    page.reload()

    expect(page.locator("#secret-gone")).to_be_visible()
    expect(page.locator("body")).not_to_contain_text("already has a subscription named")
    assert Subscription.objects.filter(room=room).count() == 1


def test_the_demos_reports_page_says_reports_need_postgresql_and_never_asks_to_press_refresh(
        signed_in: Browsing) -> None:
    page = signed_in.page
    with mock.patch("analytics.runner.reports_supported", return_value=False):  # the demo runs on SQLite
        signed_in.goto("/reports/")
        expect(page.get_by_role("button", name="Refresh now")).to_be_disabled()
        expect(page.locator("#no-reports")).to_contain_text("read the delivery log from PostgreSQL")
        expect(page.locator("#figures")).not_to_contain_text("Press Refresh now")


def test_the_throughput_charts_time_labels_stay_inside_it(browsing: Browsing, owner: User,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The chart labels every tenth minute: at hh:m0 one sits on the chart's right edge.
    now = timezone.now()
    at_a_tenth_minute = now.replace(minute=now.minute - now.minute % 10, second=30)
    monkeypatch.setattr("console.dashboard.timezone", SimpleNamespace(now=lambda: at_a_tenth_minute))
    browsing.log_in("owner", "owner-pass-1")

    ticks = browsing.page.locator("#throughput svg text.tick")
    expect(ticks).to_have_count(6)
    spans = ticks.evaluate_all("ts => ts.map(t => { const b = t.getBBox(); return [b.x, b.x + b.width]; })")
    assert all(left >= 0 and right <= 720 for left, right in spans), spans  # the viewBox is 720 wide


def test_the_retry_schedules_labels_fit_their_tiles(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    subscription = make_subscription(room, name="billing", delivery_attempts=3)
    page = signed_in.page
    for path in (f"/subscriptions/{subscription.pk}/", f"/rooms/{room.pk}/", f"/rooms/{room.pk}/subscriptions/new/"):
        signed_in.goto(path)
        expect(page.locator(".effective dt", has_text="Redeliveries")).to_be_visible()
        overflowing = page.locator(".effective dt").evaluate_all(
            "dts => dts.filter(dt => dt.scrollWidth > dt.clientWidth).map(dt => dt.textContent)")
        assert overflowing == [], f"{path}: {overflowing} overflow their tiles"


def test_the_event_type_form_starts_empty_and_lines_up(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    page = signed_in.page
    signed_in.goto(f"/rooms/{room.pk}/")
    assert page.locator("#id_schema").input_value() == ""  # not a literal `null`
    tops = [page.locator(f"#id_{name}").bounding_box()["y"] for name in ("name", "version", "schema")]
    assert max(tops) - min(tops) < 1, tops


def test_the_message_filters_keep_from_and_to_on_one_row(signed_in: Browsing) -> None:
    page = signed_in.page
    for width in (1200, 1280, 1440, 1920):  # "To (UTC)" wrapped alone onto a row at 1200 and 1920
        page.set_viewport_size({"width": width, "height": 800})
        signed_in.goto("/messages/")
        since, until = (page.get_by_label(label).bounding_box() for label in ("From (UTC)", "To (UTC)"))
        assert abs(since["y"] - until["y"]) < 1, (width, since, until)
    page.set_viewport_size(VIEWPORT)


def test_a_last_error_of_seconds_ago_reads_just_now(browsing: Browsing, owner: User) -> None:
    scenery = build_scenery()
    Subscription.objects.filter(pk=scenery.crm.pk).update(last_error_at=timezone.now() - timedelta(seconds=20))
    browsing.log_in("owner", "owner-pass-1")
    failing = browsing.page.locator("#failing tr", has_text="crm-sync")
    expect(failing).to_contain_text("· just now")
    assert "minutes ago" not in failing.inner_text()


def test_flash_messages_count_in_words(browsing: Browsing, owner: User, memory_broker: None) -> None:
    scenery = build_scenery()
    page = browsing.page
    browsing.log_in("owner", "owner-pass-1")
    browsing.goto(f"/subscriptions/{scenery.crm.pk}/dead-letters/")
    page.locator("input[name=message_ids]").first.check()
    page.get_by_role("button", name="Replay selected").click()
    page.get_by_role("button", name="Yes, replay 1").click()
    expect(page.locator(".flash")).to_have_text("1 dead letter sent again, attempts counted from 1.")

    browsing.goto(f"/subscriptions/{scenery.billing.pk}/")
    page.get_by_label("Payload").fill('{"order_id": 1}')  # order.created's schema asks for one
    page.get_by_role("button", name="Send test event").click()
    expect(page.locator(".flash")).to_have_text("Test event order.created v1 published to 1 destination: "
                                                "billing only.")


def test_a_test_event_goes_only_to_the_subscription_whose_page_sent_it(signed_in: Browsing,
                                                                      memory_broker: None) -> None:
    room = make_room(name="orders")
    make_event_type(room)
    billing = make_subscription(room, name="billing")
    make_subscription(room, name="crm-sync")
    make_subscription(room, name="warehouse", type=Subscription.Type.PULL, push_url="")
    page = signed_in.page
    signed_in.goto(f"/subscriptions/{billing.pk}/")
    expect(page.locator("#test-event")).to_contain_text("to this subscription only")

    page.get_by_role("button", name="Send test event").click()

    expect(page.locator("#destinations article.destination")).to_have_count(1)
    expect(page.locator("#destinations article.destination h3")).to_contain_text("billing")
    message = Message.objects.get(room=room)
    assert list(message.deliveries.values_list("subscription__name", flat=True)) == ["billing"]


def test_the_timeline_of_a_message_waiting_for_a_pull_consumer_stops_polling(signed_in: Browsing) -> None:
    room = make_room(name="orders")
    message = make_message(room)
    make_delivery(message, make_subscription(room, name="warehouse", type=Subscription.Type.PULL, push_url=""),
                  status=Delivery.Status.QUEUED)
    make_delivery(message, make_subscription(room, name="billing"), status=Delivery.Status.DELIVERED, attempts=1)
    polls: list[str] = []
    page = signed_in.page

    def record(request: Request) -> None:
        if request.headers.get("hx-request") and f"/messages/{message.pk}/" in request.url:
            polls.append(request.url)

    page.on("request", record)
    signed_in.goto(f"/messages/{message.pk}/")
    timeline = page.locator("#destinations")
    expect(timeline).to_have_attribute("data-live", "false")
    expect(timeline).to_contain_text("waits for a pull consumer")
    page.wait_for_timeout(2500)  # the page polled every second before
    assert polls == []

    timeline.get_by_role("link", name="Check again").click()
    expect(page.locator("#destinations")).to_have_attribute("data-live", "false")
    assert len(polls) == 1
