"""GET /metrics: Prometheus's text format, read with Prometheus's own parser, for allowed callers only.

The counters a real worker records reach the web's scrape through the shared metric files
(PROMETHEUS_MULTIPROC_DIR), and the attempt histogram counts exactly the attempts in the database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from api.metrics import queue_depths
from delivery.broker import QueueStats
from delivery.metrics import OTHER, RoomLabels, status_class
from delivery.models import Delivery, DeliveryAttempt
from dovecote import metrics
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, always, failing_then

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: Client, **headers: str) -> Samples:
    """Scrape /metrics and parse it as Prometheus does: every sample by name and labels."""
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def publish(client: Client, key: str, room_id: int, count: int = 1) -> list[str]:
    ids = []
    for n in range(count):
        response = client.post(f"/api/v1/rooms/{room_id}/messages/",
                               json.dumps({"event_type": "order.created", "event_version": "1", "payload": {"n": n}}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content
        ids.append(response.json()["message_id"])
    return ids


@pytest.mark.django_db
def test_a_publish_shows_in_the_scrape_by_room(client: Client) -> None:
    room = make_room()
    make_event_type(room)
    make_subscription(room, type="pull", push_url="")
    make_subscription(room, type="pull", push_url="")
    key = ApiKey.issue("shop", rooms=[room])[1]
    before = scrape(client)

    publish(client, key, room.pk, count=3)

    after = scrape(client)
    room_label = str(room.pk)
    assert value(after, "dovecote_messages_published_total", room=room_label) - \
        value(before, "dovecote_messages_published_total", room=room_label) == 3
    assert value(after, "dovecote_deliveries_created_total", room=room_label) - \
        value(before, "dovecote_deliveries_created_total", room=room_label) == 6
    assert value(after, "dovecote_metrics_source_up", source="database") == 1
    assert value(after, "dovecote_metrics_source_up", source="broker") == 1
    assert ("dovecote_outbox_pending", frozenset()) in after
    assert ("dovecote_push_sessions_running", frozenset()) in after


@pytest.mark.django_db
def test_metrics_are_refused_to_other_addresses_without_the_token(client: Client) -> None:
    response = client.get("/metrics", REMOTE_ADDR="10.1.2.3")
    assert response.status_code == 403
    assert b"DOVECOTE_METRICS_TOKEN" in response.content
    token = "a-long-metrics-token-0123456789"
    with override_settings(DOVECOTE_METRICS_TOKEN=token):
        assert client.get("/metrics", REMOTE_ADDR="10.1.2.3",
                          HTTP_AUTHORIZATION="Bearer wrong-token-0123456789").status_code == 403
        scrape(client, REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.mark.django_db
def test_an_allowed_network_may_scrape_without_a_token(client: Client) -> None:
    import ipaddress

    with override_settings(DOVECOTE_METRICS_ALLOW=[ipaddress.ip_network("10.1.0.0/16")]):
        scrape(client, REMOTE_ADDR="10.1.2.3")
        assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403
        assert client.get("/metrics").status_code == 403  # loopback is no longer in the list


def test_rooms_past_the_bound_are_counted_as_other() -> None:
    labels = RoomLabels()
    with override_settings(DOVECOTE_METRICS_MAX_ROOMS=2):
        assert [labels(1), labels(2), labels(3), labels(1), labels(None)] == ["1", "2", OTHER, "1", OTHER]


def test_queue_depths_name_the_deepest_queues_and_sum_the_rest() -> None:
    queues = [QueueStats("room-1::subscription-10", 5, 1, 2, 1), QueueStats("room-1::subscription-11", 50, 0, 0, 1),
              QueueStats("room-2::subscription-20", 7, 3, 0, 0), QueueStats("ExpiryQueue", 9, 0, 0, 0)]
    depths = queue_depths(queues, limit=2)
    assert [(d.room, d.subscription, d.messages) for d in depths] == [("1", "11", 50), ("2", "20", 7),
                                                                       (OTHER, OTHER, 5)]
    assert (depths[-1].scheduled, depths[-1].delivering) == (1, 2)


def test_status_classes_are_a_handful() -> None:
    assert [status_class(c) for c in (200, 204, 302, 410, 503, None, 0, 999)] == \
        ["2xx", "2xx", "3xx", "4xx", "5xx", "none", "none", "none"]


@pytest.mark.django_db(transaction=True)
def test_a_workers_attempts_reach_the_scrape_and_the_histogram_counts_every_attempt_row(
        client: Client, receiver: Receiver, start_worker, tmp_path: Path) -> None:
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    start_worker("metrics", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=1, delivery_attempts=3)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    fine = make_subscription(room, push_url=receiver.script("/fine", always(204)))
    flaky = make_subscription(room, push_url=receiver.script("/flaky", failing_then(1, status=503)))

    publish(client, key, room.pk, count=3)

    deadline = time.monotonic() + 30
    deliveries = Delivery.objects.filter(subscription__in=[fine, flaky])
    while deliveries.filter(status="delivered").count() < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert deliveries.filter(status="delivered").count() == 6
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)):
        samples = scrape(client)
    r = str(room.pk)
    assert value(samples, "dovecote_push_attempts_total", room=r, outcome="success", status_class="2xx") == 6
    assert value(samples, "dovecote_push_attempts_total", room=r, outcome="failure", status_class="5xx") == 1
    assert value(samples, "dovecote_deliveries_delivered_total", room=r, path="push") == 6
    assert value(samples, "dovecote_retries_scheduled_total", room=r) == 1
    rows = DeliveryAttempt.objects.filter(delivery__in=deliveries).count()
    assert rows == 7
    assert value(samples, "dovecote_push_attempt_duration_seconds_count", room=r) == rows
    assert value(samples, "dovecote_push_attempt_duration_seconds_bucket", room=r, le="+Inf") == rows
    assert value(samples, "dovecote_delivery_latency_seconds_count", room=r) == 6


@pytest.mark.django_db
def test_the_docs_list_every_metric_with_its_type_and_labels() -> None:
    from prometheus_client import Counter, Histogram

    from api.metrics import DeliveryStateCollector
    from delivery import metrics

    docs = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    rows = {row[0].strip("` "): row for row in (line.split("|")[1:-1] for line in docs.splitlines()
                                                 if line.startswith("| `dovecote_"))}
    recorded = [m for m in vars(metrics).values() if isinstance(m, Counter | Histogram)]
    for metric in recorded:
        name = f"{metric._name}_total" if isinstance(metric, Counter) else metric._name
        assert name in rows, name
        assert rows[name][1].strip() == metric._type
        for label in metric._labelnames:
            assert f"`{label}`" in rows[name][2], (name, label)
    with override_settings(STOMP_URL="memory://"):
        scraped = list(DeliveryStateCollector().collect())
    for family in scraped:
        assert family.name in rows and rows[family.name][1].strip() == family.type, family.name
    assert len(rows) == len(recorded) + len({f.name for f in scraped})



FORKING = """
import os
from dovecote import metrics
print(os.getpid(), metrics.process_identifier(), flush=True)
child = os.fork()
if child == 0:
    print(os.getpid(), metrics.process_identifier(), flush=True)
    os._exit(0)
os.waitpid(child, 0)
print(os.getpid(), metrics.process_identifier(), flush=True)
"""


def test_a_forked_process_names_its_metric_files_by_its_own_pid() -> None:
    """The identifier is made once per process (not a getpid per metric update); a fork must not inherit it."""
    done = subprocess.run([sys.executable, "-c", FORKING], capture_output=True, text=True, timeout=60, check=False,
                          cwd=settings.BASE_DIR, env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": ""})
    assert done.returncode == 0, done.stderr
    (parent, named), (child, child_named), (again, named_again) = (line.split() for line in done.stdout.splitlines())
    assert named == named_again == f"{metrics.HOST}-{parent}" and again == parent, done.stdout
    assert child_named == f"{metrics.HOST}-{child}" and child != parent, done.stdout
