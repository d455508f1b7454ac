"""The dashboard: the last hour's figures (polled), throughput per minute, the subscriptions failing most,
and the success rate per room over the newest report hours."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q
from django.db.models.functions import TruncMinute
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone

from console.reports import success_per_room
from console.shortcuts import render_page, staff_required, wanted_fragment
from delivery.models import Delivery, DeliveryAttempt, Message, PublishedMessage
from delivery.outbox import Backlog, backlog
from dovecote import heartbeats
from subscriptions.models import Subscription

HOUR = timedelta(hours=1)
FRAGMENTS = ("stats", "processes", "throughput", "failing")
Status = Delivery.Status


@staff_required
def dashboard(request: HttpRequest) -> TemplateResponse:
    """Show the dashboard, or the one part an htmx poll asks for."""
    now = timezone.now()
    since = now - HOUR
    parts = {
        "stats": lambda: last_hour_stats(since),
        "processes": processes,
        "throughput": lambda: throughput(since),
        "failing": lambda: failing_subscriptions(since),
        "reports": success_per_room,  # the whole page only, no poll: report rows change once an hour
    }
    wanted = wanted_fragment(request, FRAGMENTS)
    context: dict[str, Any] = {name: build() for name, build in parts.items() if wanted in (None, name)}
    return render_page(request, "console/dashboard.html", {"section": "dashboard", "now": now, **context},
                       fragments=FRAGMENTS)


def last_hour_stats(since: datetime) -> dict[str, int]:
    """Count the last hour's publishes, deliveries, retries, dead letters, unroutable messages and frames the
    watchdog sent again (four aggregate queries)."""
    settled = Delivery.objects.filter(Q(updated_at__gte=since) | Q(status=Status.RETRYING)).aggregate(
        delivered=Count("pk", filter=Q(status__in=[Status.DELIVERED, Status.ACKED], updated_at__gte=since)),
        dead_lettered=Count("pk", filter=Q(status=Status.DEAD_LETTERED, updated_at__gte=since)),
        retrying_now=Count("pk", filter=Q(status=Status.RETRYING)),
        unroutable=Count("pk", filter=Q(status=Status.UNROUTABLE, updated_at__gte=since)),
    )
    return {
        "published": Message.objects.filter(created_at__gte=since).count(),
        "retries": DeliveryAttempt.objects.filter(started_at__gte=since, next_delay_ms__isnull=False).count(),
        "resent": PublishedMessage.objects.filter(kind=PublishedMessage.Kind.RESEND, sent_at__gte=since).count(),
        **settled,
    }


@dataclass(frozen=True)
class LastSeen:
    """When a worker or beat last sent its heartbeat (dovecote/heartbeats.py), as /healthz/ready judges it."""

    role: str
    name: str
    age_s: float | None  # None: never (or forgotten)

    @property
    def is_recent(self) -> bool:
        return self.age_s is not None and self.age_s <= settings.DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS


@dataclass(frozen=True)
class Processes:
    last_seen: list[LastSeen]  # the worker's, then beat's
    outbox: Backlog


def processes() -> Processes:
    """The worker's and beat's last heartbeats and the outbox backlog (one query; the heartbeats are in the cache)."""
    now = time.time()
    seen = {}
    for role in heartbeats.ROLES:
        beat = heartbeats.last_seen(role)
        seen[role] = LastSeen(role, beat["name"], max(0.0, now - beat["at"])) if beat else LastSeen(role, "", None)
    return Processes([seen["worker"], seen["beat"]], backlog())


@dataclass(frozen=True)
class Bar:
    """One minute of the chart: a published bar and a delivered bar side by side (SVG coordinates)."""

    minute: datetime
    published: int
    delivered: int
    x: float
    published_y: float
    delivered_y: float
    published_height: float
    delivered_height: float


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    labels: list[tuple[float, str]]  # x of the centre, "HH:MM" under every tenth minute
    peak: int
    total_published: int
    total_delivered: int


CHART_WIDTH, CHART_HEIGHT, AXIS_HEIGHT = 720, 180, 20
MINUTE_WIDTH = CHART_WIDTH / 60
LABEL_HALF_WIDTH = 16  # an "HH:MM" tick label, centred under its minute, stays this far inside the chart


def throughput(since: datetime) -> Chart:
    """Build the per-minute bars of published messages and successful deliveries over the last hour."""
    start = since.replace(second=0, microsecond=0) + timedelta(minutes=1)
    published = per_minute(Message.objects.filter(created_at__gte=start), "created_at")
    delivered = per_minute(DeliveryAttempt.objects.filter(started_at__gte=start, outcome="success"), "started_at")
    peak = max([1, *published.values(), *delivered.values()])
    base = CHART_HEIGHT - AXIS_HEIGHT
    bars, labels = [], []
    for i in range(60):
        minute = start + timedelta(minutes=i)
        p, d = published.get(minute, 0), delivered.get(minute, 0)
        ph, dh = round((base - 8) * p / peak, 1), round((base - 8) * d / peak, 1)
        x = round(i * MINUTE_WIDTH + 1, 1)
        bars.append(Bar(minute, p, d, x, round(base - ph, 1), round(base - dh, 1), ph, dh))
        if minute.minute % 10 == 0:
            centre = min(max(x + MINUTE_WIDTH / 2, LABEL_HALF_WIDTH), CHART_WIDTH - LABEL_HALF_WIDTH)
            labels.append((round(centre, 1), minute.strftime("%H:%M")))
    return Chart(bars, labels, peak, sum(published.values()), sum(delivered.values()))


def per_minute(rows: Any, field: str) -> dict[datetime, int]:
    """Count rows per minute of `field` in one grouped query."""
    grouped = rows.annotate(minute=TruncMinute(field)).values("minute").annotate(n=Count("pk")).order_by()
    return {row["minute"]: row["n"] for row in grouped}


def failing_subscriptions(since: datetime, limit: int = 5) -> list[Subscription]:
    """Return the subscriptions with the most failed attempts in the last hour, with their last error."""
    failures = [outcome for outcome in DeliveryAttempt.Outcome.values if outcome != DeliveryAttempt.Outcome.SUCCESS]
    # Both conditions in one filter() so they apply to the same joined attempt, and before
    # annotate() so only the last hour's failed attempts are joined and counted.
    return list(
        Subscription.objects.select_related("room")
        .filter(deliveries__attempt_log__started_at__gte=since, deliveries__attempt_log__outcome__in=failures)
        .annotate(failures=Count("deliveries__attempt_log"))
        .order_by("-failures", "pk")[:limit]
    )
