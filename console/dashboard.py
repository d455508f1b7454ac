"""The dashboard: the last hour's figures (polled), throughput per minute, the subscriptions failing most,
and the success rate per room over the newest report hours."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.db.models.functions import TruncMinute
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone

from console.reports import success_per_room
from console.shortcuts import render_page, staff_required, wanted_fragment
from delivery.models import Delivery, DeliveryAttempt, Message, SendRecord
from delivery.outbox import Backlog, backlog
from dovecote import heartbeats
from subscriptions.models import Subscription

FRAGMENTS = ("last-hour", "processes", "failing")
Status = Delivery.Status


@staff_required
def dashboard(request: HttpRequest) -> TemplateResponse:
    """Show the dashboard, or the one part an htmx poll asks for."""
    now = timezone.now()
    window = last_hour(now)
    parts = {
        "last_hour": lambda: last_hour_figures(window),
        "processes": processes,
        "failing": lambda: failing_subscriptions(window[0]),
        "reports": success_per_room,  # the whole page only, no poll: report rows change once an hour
    }
    wanted = wanted_fragment(request, FRAGMENTS)
    # A part's fragment (the id of its element) is its name with hyphens: "last_hour" is #last-hour.
    context: dict[str, Any] = {name: build() for name, build in parts.items()
                               if wanted in (None, name.replace("_", "-"))}
    return render_page(request, "console/dashboard.html", {"section": "dashboard", "now": now, **context},
                       fragments=FRAGMENTS)


def last_hour(now: datetime) -> tuple[datetime, list[datetime]]:
    """Return the dashboard's one window: the start of the 60 minutes ending with the current one, and each minute."""
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=59)
    return start, [start + timedelta(minutes=i) for i in range(60)]


@dataclass(frozen=True)
class LastHour:
    """The last hour's figures: the cards and the chart read the same per-minute counts, so they agree."""

    start: datetime
    stats: dict[str, int]
    throughput: Chart


def last_hour_figures(window: tuple[datetime, list[datetime]]) -> LastHour:
    """Count the window's publishes and settled deliveries per minute, and the cards' other figures."""
    start, minutes = window
    published = per_minute(Message.objects.filter(created_at__gte=start), "created_at")
    settled = settled_per_minute(start)
    delivered = {minute: counts.get(Status.DELIVERED, 0) + counts.get(Status.ACKED, 0)
                 for minute, counts in settled.items()}
    stats = {
        "published": sum(published.values()),
        "delivered": sum(delivered.values()),
        "dead_lettered": sum(counts.get(Status.DEAD_LETTERED, 0) for counts in settled.values()),
        "unroutable": sum(counts.get(Status.UNROUTABLE, 0) for counts in settled.values()),
        "retrying_now": Delivery.objects.filter(status=Status.RETRYING).count(),
        "retries": DeliveryAttempt.objects.filter(started_at__gte=start, next_delay_ms__isnull=False).count(),
        "resent": SendRecord.objects.filter(kind=SendRecord.Kind.RESEND, sent_at__gte=start).count(),
    }
    return LastHour(start, stats, throughput(minutes, published, delivered))


SETTLED = [Status.DELIVERED, Status.ACKED, Status.DEAD_LETTERED, Status.UNROUTABLE]


def settled_per_minute(start: datetime) -> dict[datetime, dict[str, int]]:
    """Count the deliveries that reached each final state since `start`, per minute and state (one query)."""
    rows = (Delivery.objects.filter(status__in=SETTLED, updated_at__gte=start)
            .annotate(minute=TruncMinute("updated_at")).values("minute", "status").annotate(n=Count("pk")).order_by())
    counts: dict[datetime, dict[str, int]] = {}
    for row in rows:
        counts.setdefault(row["minute"], {})[row["status"]] = row["n"]
    return counts


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


def throughput(minutes: list[datetime], published: dict[datetime, int], delivered: dict[datetime, int]) -> Chart:
    """Lay out the per-minute bars of published messages and settled deliveries over the window's minutes."""
    peak = max([1, *published.values(), *delivered.values()])
    base = CHART_HEIGHT - AXIS_HEIGHT
    bars, labels = [], []
    for i, minute in enumerate(minutes):
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
