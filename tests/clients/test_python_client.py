"""The Python client (clients/python) against the real stack: a live Dovecote server and a Celery worker.

Every operation of the schema is called through the generated `dovecote_api` (no hand-written HTTP);
the helpers of `dovecote_client` are tested on what they add: pages, safe retries, the pull-ack loop.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml
from pytest_django.live_server_helper import LiveServer

from delivery.models import Delivery, Message
from dovecote.throttling import ApiKeyRateThrottle
from dovecote_api.api.messages import (
    messages_list,
    messages_publish,
    messages_publish_batch,
    messages_republish,
    messages_retrieve,
)
from dovecote_api.api.reports import (
    reports_endpoints_list,
    reports_errors_list,
    reports_hourly_list,
    reports_latency_list,
    reports_retry_cost_list,
    reports_runs_list,
)
from dovecote_api.api.rooms import (
    rooms_create,
    rooms_destroy,
    rooms_event_types_create,
    rooms_event_types_destroy,
    rooms_event_types_list,
    rooms_event_types_retrieve,
    rooms_list,
    rooms_partial_update,
    rooms_retrieve,
    rooms_subscriptions_create,
    rooms_subscriptions_list,
)
from dovecote_api.api.subscriptions import (
    subscriptions_ack,
    subscriptions_breaker,
    subscriptions_dead_letters_list,
    subscriptions_dead_letters_purge,
    subscriptions_dead_letters_purge_deprecated,
    subscriptions_dead_letters_replay,
    subscriptions_destroy,
    subscriptions_end_secret_overlap,
    subscriptions_extend,
    subscriptions_nack,
    subscriptions_parked_keys,
    subscriptions_parked_keys_release,
    subscriptions_partial_update,
    subscriptions_pause,
    subscriptions_pull,
    subscriptions_resume,
    subscriptions_retrieve,
    subscriptions_rotate_secret,
)
from dovecote_api.api.whoami import whoami
from dovecote_api.models import (
    AckRequest,
    BatchPublishRequest,
    DeadLetterSelectionRequest,
    EventTypeFilterRequest,
    EventTypeRequest,
    ExtendRequest,
    NackRequest,
    PatchedRoomRequest,
    PatchedSubscriptionRequest,
    PublishRequest,
    PullRequest,
    ReleaseKeyRequest,
    RoomRequest,
    RotateSecretRequest,
    SubscriptionRequest,
)
from dovecote_client import Consumed, DeadLetter, Dovecote, DovecoteError, Event, Retry
from rooms.models import ApiKey
from tests.delivery.push.test_push_delivery import wait_for_status
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]

SCHEMA = Path(__file__).resolve().parents[2] / "clients" / "openapi.yaml"


@pytest.fixture
def admin(live_server: LiveServer) -> Iterator[Dovecote]:
    with Dovecote(live_server.url, ApiKey.issue("client", is_admin=True)[1]) as dovecote:
        yield dovecote


class Calls:
    """Call generated operations through one Dovecote and remember which were called."""

    def __init__(self, dovecote: Dovecote) -> None:
        self.dovecote = dovecote
        self.called: set[str] = set()

    def __call__(self, operation: ModuleType, *args: Any, **kwargs: Any) -> Any:
        self.called.add(operation.__name__.rsplit(".", 1)[1])
        return self.dovecote.call(operation, *args, **kwargs)

    def refused(self, operation: ModuleType, *args: Any, **kwargs: Any) -> DovecoteError:
        with pytest.raises(DovecoteError) as refused:
            self(operation, *args, **kwargs)
        return refused.value


def schema_operations() -> set[str]:
    paths = yaml.safe_load(SCHEMA.read_text())["paths"]
    return {operation["operationId"] for methods in paths.values() for operation in methods.values()}


def pull_one(call: Calls, subscription_id: int) -> Any:
    [message] = call(subscriptions_pull, subscription_id, body=PullRequest(max_messages=1, wait_ms=5000)).messages
    return message


def test_the_generated_client_performs_every_documented_operation(admin: Dovecote, receiver: Receiver) -> None:
    call = Calls(admin)
    assert call(whoami).admin is True
    room = call(rooms_create, body=RoomRequest(name="client-orders", delivery_delay_ms=100, delivery_attempts=2))
    assert room.address == f"room-{room.id}"
    assert call(rooms_retrieve, room.id).name == "client-orders"
    assert call(rooms_partial_update, room.id, body=PatchedRoomRequest(description="from the client")).description
    assert "client-orders" in [r.name for r in call(rooms_list, name="client-orders").results]
    event_type = call(rooms_event_types_create, room.id, body=EventTypeRequest(name="order.created", version="1"))
    assert call(rooms_event_types_retrieve, room.id, event_type.id).name == "order.created"
    assert len(call(rooms_event_types_list, room.id).results) == 1

    push = call(rooms_subscriptions_create, room.id, body=SubscriptionRequest(
        name="billing", type_="push", push_url=receiver.url("/hook"),
        event_types=[EventTypeFilterRequest(name="order.created")]))
    assert push.signing_secret.startswith("whsec_") and push.status == "active"
    pulled = call(rooms_subscriptions_create, room.id, body=SubscriptionRequest(name="audit", type_="pull"))
    assert pulled.push_url is None and pulled.signing_secret is None
    assert {s.name for s in call(rooms_subscriptions_list, room.id).results} == {"billing", "audit"}
    assert call(subscriptions_retrieve, pulled.id).destination == f"room-{room.id}::subscription-{pulled.id}"
    patched = call(subscriptions_partial_update, pulled.id, body=PatchedSubscriptionRequest(max_in_flight=5))
    assert patched.max_in_flight == 5
    assert call(subscriptions_pause, push.id).status == "paused"
    assert call(subscriptions_resume, push.id).status == "active"
    rotated = call(subscriptions_rotate_secret, push.id, body=RotateSecretRequest(overlap_seconds=3600))
    assert rotated.signing_secret != push.signing_secret and rotated.previous_secret_until
    assert call(subscriptions_end_secret_overlap, push.id).previous_secret_until is None
    breaker = call(subscriptions_breaker, push.id)
    assert breaker.state == "closed" and breaker.history == []

    published = call(messages_publish, room.id, x_correlation_id="order-1", body=PublishRequest(
        event_type="order.created", event_version="1", payload={"order_id": 1}))
    assert published.correlation_id == "order-1" and len(published.destinations) == 2
    batch = call(messages_publish_batch, room.id, body=BatchPublishRequest(messages=[
        PublishRequest(event_type="order.created", event_version="1", payload={"order_id": n}) for n in (2, 3)]))
    assert len(batch.messages) == 2
    wait_for_status(str(published.message_id), push.id, "delivered")
    assert call(messages_retrieve, published.message_id).payload == {"order_id": 1}
    assert {row.status for row in call(messages_list, correlation_id="order-1").results} >= {"delivered"}

    first, second, third = (pull_one(call, pulled.id) for _ in range(3))
    assert call(subscriptions_extend, pulled.id, body=ExtendRequest(ack_ids=[first.ack_id], lease_ms=60_000)).done
    assert call(subscriptions_ack, pulled.id, body=AckRequest(ack_ids=[first.ack_id])).done == [first.ack_id]
    # Retried a minute later: it stays out of the pulls below.
    assert call(subscriptions_nack, pulled.id, body=NackRequest(ack_ids=[second.ack_id], delay_ms=60_000)).done
    call(subscriptions_nack, pulled.id, body=NackRequest(ack_ids=[third.ack_id], action="dead_letter"))
    [dead] = call(subscriptions_dead_letters_list, pulled.id).results
    assert dead.message_id == third.message_id
    assert call(subscriptions_dead_letters_replay, pulled.id, body=DeadLetterSelectionRequest(all_=True)).count == 1
    again = pull_one(call, pulled.id)
    call(subscriptions_nack, pulled.id, body=NackRequest(ack_ids=[again.ack_id], action="dead_letter"))
    selection = DeadLetterSelectionRequest(message_ids=[again.message_id])
    assert call(subscriptions_dead_letters_purge, pulled.id, body=selection).count == 1
    # The deprecated DELETE takes a body OpenAPI 3.0 cannot describe: a generated client reaches it without one.
    assert call.refused(subscriptions_dead_letters_purge_deprecated, pulled.id).status == 400

    # Routing: only an unroutable message is re-published, only a parked key released (both tested in full
    # in test_unroutable.py and test_ordering_keys.py).
    assert call.refused(messages_republish, published.message_id).status == 409
    assert call(subscriptions_parked_keys, pulled.id) == []
    release = ReleaseKeyRequest(ordering_key="order-1")
    assert call.refused(subscriptions_parked_keys_release, pulled.id, body=release).status == 409

    for report in (reports_hourly_list, reports_latency_list, reports_errors_list, reports_retry_cost_list,
                   reports_endpoints_list):
        assert call(report, room=room.id).results == []  # no report run yet
    assert isinstance(call(reports_runs_list).results, list)

    call(rooms_event_types_destroy, room.id, event_type.id)
    assert call(subscriptions_destroy, push.id).id == push.id
    assert call(rooms_destroy, room.id).subscriptions_deleted == 1
    assert call.refused(rooms_retrieve, room.id).status == 404
    assert call.called == schema_operations()


def test_errors_come_back_as_exceptions_with_their_status_and_body(admin: Dovecote, live_server: LiveServer) -> None:
    refused = Calls(admin).refused(rooms_create, body=RoomRequest(name="x", delivery_attempts=-1))
    assert refused.status == 400 and "delivery_attempts" in refused.body
    with Dovecote(live_server.url, "dc_not-a-key") as stranger:
        assert Calls(stranger).refused(whoami).status == 401


def test_pages_yield_every_item_of_a_list_across_pages(admin: Dovecote) -> None:
    names = {make_room(name=f"paged-{n}").name for n in range(7)}
    seen = [room.name for room in admin.pages(rooms_list, search="paged-", page_size=3)]
    assert sorted(seen) == sorted(names)


class LosesFirstReply(httpx.HTTPTransport):
    """Send each request, but lose the reply of the first: the server acted, the client cannot know."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.sent += 1
        if self.sent == 1:
            response.read()
            raise httpx.ReadError("connection reset after the request was sent", request=request)
        return response


def test_a_publish_whose_reply_was_lost_is_sent_again_and_published_once(live_server: LiveServer) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    transport = LosesFirstReply()
    with Dovecote(live_server.url, key, httpx_args={"transport": transport}, sleep=lambda s: None) as dovecote:
        reply = dovecote.publish(room.pk, "order.created", {"order_id": 7}, correlation_id="order-7")
    assert transport.sent == 2
    [message] = Message.objects.filter(room=room)
    assert str(message.pk) == str(reply.message_id) and message.correlation_id == "order-7"
    assert message.idempotency_key.startswith("dc-")


def test_a_publish_refused_for_the_rate_waits_retry_after_and_goes_through(
    live_server: LiveServer, settings: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.DOVECOTE_API_RATE = "1/s"
    room = make_room()
    make_event_type(room)
    # The rate's clock stands at the start of a window and moves only when the client sleeps: on a
    # loaded machine the two requests could otherwise fall into two windows and neither be refused.
    now = [float(int(time.time()))]
    monkeypatch.setattr(ApiKeyRateThrottle, "clock", staticmethod(lambda: now[0]))
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    with Dovecote(live_server.url, ApiKey.issue("shop", rooms=[room])[1], sleep=sleep) as dovecote:
        dovecote.call(whoami)  # the window's one request
        reply = dovecote.publish(room.pk, "order.created", {"order_id": 8})
    assert slept and slept[0] >= 1
    assert Message.objects.get(room=room).pk == reply.message_id


def test_a_batch_takes_the_correlation_id_header_for_events_naming_none(admin: Dovecote) -> None:
    room = make_room()
    make_event_type(room)
    replies = admin.publish_batch(room.pk, [Event("order.created", {"n": 1}),
                                           Event("order.created", {"n": 2}, correlation_id="own")],
                                  correlation_id="batch-7")
    assert [r.correlation_id for r in replies] == ["batch-7", "own"]
    assert Message.objects.filter(room=room, idempotency_key__startswith="dc-").count() == 2


def test_consume_acks_what_the_handler_took_and_retries_or_dead_letters_the_rest(admin: Dovecote) -> None:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=1, delivery_attempts=3)
    make_event_type(room)
    subscription = make_subscription(room, type="pull", push_url="")
    for order in ("ok", "flaky", "poison"):
        admin.publish(room.pk, "order.created", {"order": order})
    seen: list[tuple[str, int]] = []

    def handle(message: Any) -> None:
        order = message.payload["order"]
        seen.append((order, message.attempt))
        if order == "poison":
            raise DeadLetter("no such order")
        if order == "flaky" and message.attempt == 1:
            raise Retry(delay_ms=200)

    def done(consumed: Consumed) -> bool:
        return (consumed.acked == 2 and consumed.dead_lettered == 1) or consumed.pulls > 40

    consumed = admin.consume(subscription.pk, handle, wait_ms=2000, stop=done)
    assert (consumed.acked, consumed.retried, consumed.dead_lettered, consumed.lost) == (2, 1, 1, 0)
    assert sorted(seen) == [("flaky", 1), ("flaky", 2), ("ok", 1), ("poison", 1)]
    statuses = {d.message.payload["order"]: d.status for d in Delivery.objects.filter(subscription=subscription)}
    assert statuses == {"ok": "acked", "flaky": "acked", "poison": "dead_lettered"}
