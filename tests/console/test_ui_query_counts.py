"""Every list page runs the same number of SQL queries with 10 and with 10,000 messages in the log, and the
report pages as many with one hour of report rows as with a month of them."""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from analytics.models import ErrorReport, HourlyReport, LatencyReport, ReportRun, RetryCostReport
from delivery.models import Delivery, DeliveryAttempt, Message
from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_room, make_subscription
from tests.report_rows import error_row, hourly_row, latency_row, retry_cost_row

pytestmark = pytest.mark.django_db

# Five statuses over three subscriptions: every subscription gets rows of every status.
STATUSES = ["delivered", "retrying", "dead_lettered", "queued", "expired"]


def add_messages(room: Room, subscriptions: list[Subscription], count: int) -> None:
    """Bulk-create `count` messages over the last hour, one delivery and one attempt each."""
    now = timezone.now()
    messages = [Message(id=uuid.uuid4(), room=room, event_type="order.created", event_version="1",
                        payload={"n": n}, correlation_id=f"c-{n}", created_at=now - timedelta(seconds=n % 3600))
                for n in range(count)]
    Message.objects.bulk_create(messages, batch_size=2000)
    deliveries = Delivery.objects.bulk_create(
        [Delivery(message=m, subscription=s, destination=s.destination, status=STATUSES[n % 5], attempts=1,
                  created_at=m.created_at, last_error="HTTP 500")
         for n, (m, s) in enumerate(zip(messages, itertools.cycle(subscriptions), strict=False))], batch_size=2000)
    DeliveryAttempt.objects.bulk_create(
        [DeliveryAttempt(delivery=d, correlation_id="c", attempt=1, started_at=d.created_at,
                         outcome="success" if d.status == "delivered" else "failure", status_code=500)
         for d in deliveries], batch_size=2000)


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_list_pages_run_as_many_queries_for_10_as_for_10000_messages(staff_client: Client) -> None:
    room = make_room(name="orders")
    make_event_type(room)
    subscriptions = [make_subscription(room, name=f"s{n}") for n in range(3)]
    dead_letters = f"/subscriptions/{subscriptions[0].pk}/dead-letters/"
    pages = ["/messages/", "/messages/?status=dead_lettered&q=c-5", dead_letters, "/dead-letters/", "/rooms/",
             "/subscriptions/", "/", f"/rooms/{room.pk}/", "/api-keys/"]
    add_messages(room, subscriptions, 10)
    for page in pages:
        queries(staff_client, page)  # the first request of a session caches a few things
    few = {page: queries(staff_client, page) for page in pages}

    add_messages(room, subscriptions, 9_990)
    many = {page: queries(staff_client, page) for page in pages}

    assert many == few
    assert max(few.values()) <= 12, few
    assert len(staff_client.get("/messages/").context["page"].rows) == 50
    assert len(staff_client.get(dead_letters).context["page"].rows) == 50


def add_report_hours(subscriptions: list[Subscription], hours: list[datetime]) -> None:
    """Bulk-create every report table's rows for each subscription (and room) and hour."""
    rooms = {s.room_id for s in subscriptions}
    HourlyReport.objects.bulk_create([hourly_row(s.room_id, s.pk, h) for h in hours for s in subscriptions])
    LatencyReport.objects.bulk_create(
        [latency_row("room", room_id, None, h, (100, 900, 1500)) for h in hours for room_id in rooms]
        + [latency_row("subscription", s.room_id, s.pk, h, (90, 800, 1400)) for h in hours for s in subscriptions])
    ErrorReport.objects.bulk_create([error_row(s.room_id, s.pk, h, outcome, code, 3) for h in hours
                                     for s in subscriptions for outcome, code in (("failure", 503), ("timeout", None))])
    RetryCostReport.objects.bulk_create([retry_cost_row(s.room_id, s.pk, h) for h in hours for s in subscriptions])


def test_report_pages_run_as_many_queries_for_one_hour_as_for_a_month_of_rows(staff_client: Client) -> None:
    subscriptions = [make_subscription(room, name=f"s{n}") for room in (make_room(name="a"), make_room(name="b"))
                     for n in range(3)]
    newest = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    ReportRun.objects.create(mode="full", status="succeeded", progress=100, finished_at=timezone.now())
    pages = ["/", "/reports/", "/reports/?window=30d", f"/reports/?room={subscriptions[0].room_id}&window=30d",
             f"/reports/?subscription={subscriptions[4].pk}&window=30d"]
    add_report_hours(subscriptions, [newest])
    for page in pages:
        queries(staff_client, page)
    few = {page: queries(staff_client, page) for page in pages}

    add_report_hours(subscriptions, [newest - timedelta(hours=n) for n in range(1, 30 * 24)])
    many = {page: queries(staff_client, page) for page in pages}

    assert many == few
    assert max(few.values()) <= 16, few
    assert len(staff_client.get("/reports/?window=30d").context["figures"].success.hours) == 720
