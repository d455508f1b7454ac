"""`GET /metrics`: Prometheus's text format, for a bearer token or an allowed address (docs/operations.md#metrics).

The counters and histograms come from every process that records them (delivery/metrics.py,
summed over PROMETHEUS_MULTIPROC_DIR when several processes share it). The gauges below are read
when the scrape asks, not kept up to date by the delivery path: the push sessions holding a claim,
pull leases, the outbox's backlog and the age of its oldest row (a few indexed queries), the
broker's queue depths (one management call to Artemis), and how old the last heartbeats are.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from delivery import outbox
from delivery.broker import QueueStats
from delivery.broker.shared import shared_broker
from delivery.metrics import OTHER
from delivery.models import Delivery, PushClaim
from dovecote import heartbeats
from dovecote.throttling import client_address

log = logging.getLogger("dovecote.metrics")

DESTINATION = re.compile(r"^room-(\d+)::subscription-(\d+)$")


def may_scrape(request: HttpRequest) -> bool:
    """The bearer token DOVECOTE_METRICS_TOKEN, or a client address in DOVECOTE_METRICS_ALLOW."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    expected = settings.DOVECOTE_METRICS_TOKEN
    if expected and scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected.encode()):
        return True
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(address in network for network in settings.DOVECOTE_METRICS_ALLOW)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Every metric in Prometheus's text format."""
    if not may_scrape(request):
        return HttpResponse("metrics are for the bearer token DOVECOTE_METRICS_TOKEN or an address in "
                            "DOVECOTE_METRICS_ALLOW\n", status=403, content_type="text/plain")
    response = HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


def exposition() -> bytes:
    """The recorded metrics (of every process sharing the metric files, or of this one) and the scrape-time gauges."""
    if directory := settings.PROMETHEUS_MULTIPROC_DIR:
        recorded = CollectorRegistry()
        multiprocess.MultiProcessCollector(recorded, path=directory)
    else:
        recorded = REGISTRY
    return generate_latest(recorded) + generate_latest(STATE)


@dataclass(frozen=True)
class QueueDepth:
    room: str
    subscription: str
    messages: int
    scheduled: int
    delivering: int


def queue_depths(queues: list[QueueStats], limit: int) -> list[QueueDepth]:
    """Dovecote's subscription queues by room and subscription id: the `limit` deepest, the rest summed as OTHER."""
    ours = [QueueDepth(match[1], match[2], queue.messages, queue.scheduled, queue.delivering)
            for queue in queues if (match := DESTINATION.match(queue.destination))]
    ours.sort(key=lambda q: (-q.messages, int(q.subscription)))
    shown, rest = ours[:limit], ours[limit:]
    if rest:
        shown.append(QueueDepth(OTHER, OTHER, sum(q.messages for q in rest), sum(q.scheduled for q in rest),
                                sum(q.delivering for q in rest)))
    return shown


class DeliveryStateCollector(Collector):
    """The gauges read at scrape time; a source that does not answer leaves its gauges out and says so."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("dovecote_metrics_source_up",
                               "Whether a source of the scrape-time gauges answered this scrape (1) or not (0).",
                               labels=["source"])
        for source, read in (("database", self._database), ("broker", self._broker), ("cache", self._heartbeats)):
            try:
                families = list(read())
            except Exception as error:  # noqa: BLE001 - a source that fails must not fail the scrape
                log.warning("metrics: the %s did not answer: %s", source, error)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from families
        yield up

    def _database(self) -> Iterator[Metric]:
        now = timezone.now()
        sessions = PushClaim.objects.filter(until__gt=now).count()
        yield GaugeMetricFamily("dovecote_push_sessions_running",
                                "Push sessions holding a live claim on their subscription.", value=sessions)
        leases = Delivery.objects.filter(status=Delivery.Status.LEASED).count()
        yield GaugeMetricFamily("dovecote_pull_leases_outstanding",
                                "Pulled messages leased and not yet acked, nacked or expired.", value=leases)
        pending = outbox.backlog(now)
        yield GaugeMetricFamily("dovecote_outbox_pending",
                                "Deliveries written but not yet confirmed by the broker (the outbox).",
                                value=pending.pending)
        yield GaugeMetricFamily("dovecote_outbox_oldest_pending_age_seconds",
                                "Age of the oldest delivery still in the outbox; 0 when it is empty.",
                                value=pending.oldest_age_s)

    def _broker(self) -> Iterator[Metric]:
        depths = queue_depths(shared_broker().queues("subscription-"), settings.DOVECOTE_METRICS_MAX_QUEUES)
        families = {
            "messages": GaugeMetricFamily(
                "dovecote_broker_queue_messages",
                "Messages on a subscription's queue in the broker: ready, scheduled and being delivered.",
                labels=["room", "subscription"]),
            "scheduled": GaugeMetricFamily(
                "dovecote_broker_queue_scheduled_messages",
                "Messages on a subscription's queue waiting for their scheduled time (retries).",
                labels=["room", "subscription"]),
            "delivering": GaugeMetricFamily(
                "dovecote_broker_queue_delivering_messages",
                "Messages of a subscription's queue handed to a consumer and not yet acked.",
                labels=["room", "subscription"]),
        }
        for depth in depths:
            for field, family in families.items():
                family.add_metric([depth.room, depth.subscription], getattr(depth, field))
        yield from families.values()

    def _heartbeats(self) -> Iterator[Metric]:
        age = GaugeMetricFamily("dovecote_heartbeat_age_seconds",
                                "Seconds since the newest heartbeat of a Celery worker or of beat (absent: never).",
                                labels=["role"])
        now = time.time()
        for role in heartbeats.ROLES:
            seconds = heartbeats.age_s(role, now)
            if seconds is not None:
                age.add_metric([role], seconds)
        yield age


STATE = CollectorRegistry(auto_describe=False)
STATE.register(DeliveryStateCollector())
