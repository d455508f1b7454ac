"""OpenTelemetry: one trace per message, from the publish request through the broker send to each push attempt.

The SDK's in-memory exporter collects the spans of this process: the publish request (continuing the
publisher's W3C traceparent), the send to Artemis, each POST (a client span) and its settlement.
The receiver gets a traceparent naming the attempt's span, so it can continue the trace.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from django.test import Client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from delivery.models import Delivery, Message
from delivery.push.engine import PushEngine
from dovecote import tracing
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_push_claim, make_room, make_subscription
from tests.receiver import Receiver, failing_then

PUBLISHER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PUBLISHER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    yield exporter
    tracing.use_provider(None)


def run_session(subscription: Subscription) -> None:
    """Run push sessions for the subscription in this process, as a worker's engine would, until none is due.

    A session ends after 3 s, or 1 s idle; on a loaded machine the retry may come after that, so
    another session runs while the subscription's deliveries are unsettled (at most 60 s).
    """
    deadline = time.monotonic() + 60
    while True:
        token = make_push_claim(subscription)
        engine = PushEngine()
        engine.session_budget_s, engine.session_idle_s = 3.0, 1.0
        try:
            engine.run_session(subscription.pk, token, timeout=30)
        finally:
            engine.stop(timeout=10)
        statuses = list(Delivery.objects.filter(subscription=subscription).values_list("status", flat=True))
        settled = (Delivery.Status.DELIVERED, Delivery.Status.DEAD_LETTERED)
        if all(status in settled for status in statuses) or time.monotonic() > deadline:
            return


def wait_until_queued(message_id: str) -> None:
    deadline = time.monotonic() + 15
    while Delivery.objects.filter(message_id=message_id, status="pending").exists():
        assert time.monotonic() < deadline, "the relay did not send the message"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)  # the relay's and the push engine's threads read the rows
def test_a_message_is_one_trace_from_publish_to_each_attempt_and_its_settlement(
        client: Client, receiver: Receiver, spans: InMemorySpanExporter) -> None:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=1, delivery_attempts=2)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/flaky", failing_then(1)))

    response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                           json.dumps({"event_type": "order.created", "event_version": "1", "payload": {},
                                       "correlation_id": "order-7"}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
                           HTTP_TRACEPARENT=f"00-{PUBLISHER_TRACE}-{PUBLISHER_SPAN}-01")
    message_id = response.json()["message_id"]
    wait_until_queued(message_id)
    run_session(subscription)

    assert Delivery.objects.get(message_id=message_id).status == "delivered"
    finished = spans.get_finished_spans()
    assert {f"{span.context.trace_id:032x}" for span in finished} == {PUBLISHER_TRACE}
    [publish] = [s for s in finished if s.name == "publish"]
    assert publish.kind is SpanKind.SERVER and f"{publish.parent.span_id:016x}" == PUBLISHER_SPAN
    assert publish.attributes["dovecote.correlation_id"] == "order-7"
    assert publish.attributes["dovecote.message_id"] == message_id
    [send] = [s for s in finished if s.name == "send"]
    assert send.kind is SpanKind.PRODUCER and send.parent.span_id == publish.context.span_id
    attempts = sorted((s for s in finished if s.name == "POST"), key=lambda s: s.attributes["dovecote.attempt"])
    assert [a.attributes["dovecote.attempt"] for a in attempts] == [1, 2]
    assert [a.attributes["http.response.status_code"] for a in attempts] == [500, 204]
    assert attempts[0].status.status_code is StatusCode.ERROR
    for attempt in attempts:
        assert attempt.kind is SpanKind.CLIENT and attempt.parent.span_id == publish.context.span_id
        assert attempt.attributes["dovecote.correlation_id"] == "order-7"
    settles = [s for s in finished if s.name == "settle"]
    assert sorted(s.parent.span_id for s in settles) == sorted(a.context.span_id for a in attempts)
    for settle in settles:  # the ids docs/operations.md promises on every span
        assert settle.attributes["dovecote.correlation_id"] == "order-7"
        assert settle.attributes["dovecote.message_id"] == message_id
        assert settle.attributes["dovecote.subscription_id"] == subscription.pk
    assert sorted(s.attributes["dovecote.attempt"] for s in settles) == [1, 2]
    received = [r.headers["traceparent"] for r in receiver.requests("/flaky")]
    assert received == [f"00-{PUBLISHER_TRACE}-{a.context.span_id:016x}-01" for a in attempts]
    assert Message.objects.get(pk=message_id).traceparent == \
        f"00-{PUBLISHER_TRACE}-{publish.context.span_id:016x}-01"


@pytest.mark.django_db(transaction=True)
def test_with_tracing_off_the_publishers_traceparent_still_reaches_the_receiver(
        client: Client, receiver: Receiver) -> None:
    assert not tracing.enabled()
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/plain"))
    traceparent = f"00-{PUBLISHER_TRACE}-{PUBLISHER_SPAN}-01"

    response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                           json.dumps({"event_type": "order.created", "event_version": "1", "payload": {}}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
                           HTTP_TRACEPARENT=traceparent.upper())  # read case-insensitively
    wait_until_queued(response.json()["message_id"])
    run_session(subscription)

    [request] = receiver.requests("/plain")
    assert request.headers["traceparent"] == traceparent


def test_only_well_formed_traceparents_are_taken() -> None:
    good = f"00-{PUBLISHER_TRACE}-{PUBLISHER_SPAN}-01"
    assert tracing.valid_traceparent(good) == good
    for bad in ("", "garbage", f"01-{PUBLISHER_TRACE}-{PUBLISHER_SPAN}-01", f"00-{'0' * 32}-{PUBLISHER_SPAN}-01",
                f"00-{PUBLISHER_TRACE}-{PUBLISHER_SPAN}-01\nx", f"00-{PUBLISHER_TRACE}-{'0' * 16}-01"):
        assert tracing.valid_traceparent(bad) == ""


def test_tracing_is_on_only_when_the_otel_variables_ask() -> None:
    assert not tracing.wanted({})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing.wanted({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert not tracing.wanted({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"})
    with pytest.raises(tracing.TracingConfigError, match="OTEL_TRACES_EXPORTER='zipkin'"):
        tracing.exporter_for("zipkin")


@pytest.mark.django_db
def test_a_batch_is_one_publish_span_and_every_message_keeps_its_context(
        client: Client, spans: InMemorySpanExporter) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    items = [{"event_type": "order.created", "event_version": "1", "payload": {"n": n}} for n in range(3)]

    response = client.post(f"/api/v1/rooms/{room.pk}/messages/batch/", json.dumps({"messages": items}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
                           HTTP_TRACEPARENT=f"00-{PUBLISHER_TRACE}-{PUBLISHER_SPAN}-01")

    assert response.status_code == 202, response.content
    [publish] = [s for s in spans.get_finished_spans() if s.name == "publish"]
    assert publish.attributes["dovecote.messages"] == 3
    ids = [m["message_id"] for m in response.json()["messages"]]
    assert set(Message.objects.filter(pk__in=ids).values_list("traceparent", flat=True)) == {
        f"00-{PUBLISHER_TRACE}-{publish.context.span_id:016x}-01"}
