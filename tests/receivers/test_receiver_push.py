"""Dovecote pushes into the receiver kit's example shop (and a Django receiver): the real stack end to end.

Publish over the API → the broker → a Celery worker → a signed POST to the shop, which verifies it,
stores it in its inbox and creates the order in one transaction, and answers with the status that
tells Dovecote what to do next.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from pytest_django.live_server_helper import LiveServer

from delivery.models import DeliveryAttempt
from dovecote_receiver import ForgedPush, Push, SlowDown, Verifier
from dovecote_receiver.django.models import InboxMessage
from rooms.models import ApiKey, Room
from subscriptions.models import Subscription
from tests import receiver_urls
from tests.delivery.push.test_push_delivery import publish, wait_for_status
from tests.factories import make_event_type, make_room, make_subscription
from tests.shop import Shop, orders, post, signed_headers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]

WsgiApp = Callable[..., Any]


@pytest.fixture
def room() -> Room:
    room = make_room(delivery_delay_ms=200, delivery_delay_multiplier=1, delivery_attempts=3)
    for name in ("order.created", "shop.closed", "shop.busy"):
        make_event_type(room, name=name)
    return room


@pytest.fixture
def key(room: Room) -> str:
    return ApiKey.issue("shop", rooms=[room])[1]


@pytest.fixture
def shops(tmp_path: Path) -> Iterator[Callable[..., Shop]]:
    """Start example shops, each with its own SQLite file; all stop after the test."""
    started: list[Shop] = []

    def start(secrets: list[str], **options: Any) -> Shop:
        started.append(Shop(tmp_path / f"shop-{len(started)}.sqlite3", secrets, **options))
        return started[-1]

    yield start
    for shop in started:
        shop.close()


def order(client: Client, key: str, room: Room, order_id: int, event_type: str = "order.created") -> str:
    return publish(client, key, room.pk, event_type=event_type, payload={"order_id": order_id})["message_id"]


class Captured:
    """WSGI middleware keeping every request's headers and body; it may lose the shop's first reply."""

    def __init__(self, app: WsgiApp, *, lose_first_reply: bool = False) -> None:
        self.app = app
        self.lose_first_reply = lose_first_reply
        self.requests: list[tuple[dict[str, str], bytes]] = []

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Any:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        self.requests.append((headers, body))
        if self.lose_first_reply and len(self.requests) == 1:
            b"".join(self.app(environ, lambda *args: None))  # the shop handles it and commits...
            start_response("502 Bad Gateway", [("Content-Type", "text/plain")])  # ...but its reply is lost
            return [b"the reply was lost on the way"]
        return self.app(environ, start_response)


def test_a_push_whose_reply_was_lost_is_retried_and_handled_once(client: Client, room: Room, key: str,
                                                                  shops: Callable[..., Shop]) -> None:
    subscription = make_subscription(room, push_url="http://127.0.0.1:9/")
    capture: list[Captured] = []
    shop = shops([subscription.signing_secret],
                 wrap=lambda app: capture.append(Captured(app, lose_first_reply=True)) or capture[0])
    Subscription.objects.filter(pk=subscription.pk).update(push_url=shop.url)

    message_id = order(client, key, room, 1)

    delivery = wait_for_status(message_id, subscription.pk, "delivered")
    assert delivery.attempts == 2 and shop.statuses == [502, 200]
    assert shop.rows("SELECT order_id, webhook_id FROM orders") == [(1, message_id)]
    assert shop.rows("SELECT webhook_id, attempt FROM dovecote_inbox") == [(message_id, 1)]
    headers, body = capture[0].requests[-1]  # Dovecote's retry, as sent: a third copy is a duplicate too
    again = post(shop.url, headers, body)
    assert (again.status_code, again.json()) == (200, {"id": message_id, "duplicate": True})
    assert shop.rows("SELECT count(*) FROM orders") == [(1,)]


def test_a_crash_between_receiving_and_handling_rolls_back_and_the_retry_is_handled_once(
    client: Client, room: Room, key: str, shops: Callable[..., Shop],
) -> None:
    def crash_on_first_attempt(push: Push, connection: Any) -> None:
        orders.handle_order(push, connection)  # the order is written in the inbox's transaction...
        if push.attempt == 1:
            raise RuntimeError("the process died before the commit")  # ...and goes with it

    subscription = make_subscription(room, push_url="http://127.0.0.1:9/")
    shop = shops([subscription.signing_secret], handler=crash_on_first_attempt)
    Subscription.objects.filter(pk=subscription.pk).update(push_url=shop.url)

    message_id = order(client, key, room, 2)

    assert wait_for_status(message_id, subscription.pk, "delivered").attempts == 2
    assert shop.statuses == [500, 200]
    assert shop.rows("SELECT order_id FROM orders") == [(2,)]
    assert shop.rows("SELECT attempt FROM dovecote_inbox") == [(2,)]


def test_a_push_the_shop_cannot_verify_is_refused_until_dead_lettered(client: Client, room: Room, key: str,
                                                                   shops: Callable[..., Shop]) -> None:
    stranger = make_subscription(room, push_url="http://127.0.0.1:9/")
    subscription = make_subscription(room, push_url="http://127.0.0.1:9/")
    shop = shops([stranger.signing_secret])  # the shop knows another subscription's secret only
    Subscription.objects.filter(pk=subscription.pk).update(push_url=shop.url)
    Subscription.objects.filter(pk=stranger.pk).update(status="paused")

    message_id = order(client, key, room, 3)

    delivery = wait_for_status(message_id, subscription.pk, "dead_lettered")
    assert shop.statuses == [401] * 4
    assert set(DeliveryAttempt.objects.filter(delivery=delivery).values_list("status_code", flat=True)) == {401}
    assert shop.rows("SELECT count(*) FROM orders") == [(0,)]
    assert shop.rows("SELECT count(*) FROM dovecote_inbox") == [(0,)]


def test_a_stale_or_forged_push_is_refused(shops: Callable[..., Shop]) -> None:
    secret = Subscription(type="push").signing_secret
    shop = shops([secret])
    body = (b'{"id": "m-1", "type": "order.created", "version": "1", "room": "r", "correlation_id": "c",'
            b' "timestamp": "2026-11-23T12:00:00+00:00", "data": {"order_id": 4}}')
    stale = post(shop.url, signed_headers([secret], "m-1", body, timestamp=int(time.time()) - 3600), body)
    forged = post(shop.url, signed_headers([secret], "m-1", body), body.replace(b'"order_id": 4', b'"order_id": 5'))
    assert (stale.status_code, forged.status_code) == (401, 401)
    assert post(shop.url, signed_headers([secret], "m-1", body), body).status_code == 200
    assert shop.rows("SELECT order_id FROM orders") == [(4,)]


def test_pushes_are_accepted_across_a_secret_rotation(client: Client, room: Room, key: str,
                                                      shops: Callable[..., Shop]) -> None:
    subscription = make_subscription(room, push_url="http://127.0.0.1:9/")
    old = subscription.signing_secret
    rotated = client.post(f"/api/v1/subscriptions/{subscription.pk}/rotate-secret/", {"overlap_seconds": 0},
                          content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    new = rotated.json()["signing_secret"]
    capture: list[Captured] = []
    both = shops([old, new], wrap=lambda app: capture.append(Captured(app)) or capture[0])
    Subscription.objects.filter(pk=subscription.pk).update(push_url=both.url)

    message_id = order(client, key, room, 6)  # no overlap asked for: Dovecote signs with the new secret only

    wait_for_status(message_id, subscription.pk, "delivered")
    assert both.statuses == [200]
    headers, body = capture[0].requests[0]
    assert Verifier([new]).verify(headers, body) == message_id
    with pytest.raises(ForgedPush):
        Verifier([old]).verify(headers, body)
    # During an overlap a push carries both signatures: a receiver that knows either secret accepts it.
    overlap = signed_headers([old, new], message_id, body)
    assert len(overlap["webhook-signature"].split(" ")) == 2
    for knows in ([old], [new]):
        shop = shops(knows)
        reply = post(shop.url, overlap, body)
        assert (reply.status_code, reply.json()["duplicate"]) == (200, False), knows
        assert shop.rows("SELECT order_id FROM orders") == [(6,)]
    assert post(shops([Subscription(type="push").signing_secret]).url, overlap, body).status_code == 401


def test_a_shop_answering_410_unsubscribes_and_one_answering_429_is_retried_after_its_retry_after(
    client: Client, room: Room, key: str, shops: Callable[..., Shop],
) -> None:
    def busy_at_first(push: Push, connection: Any) -> None:
        if push.type != "shop.busy":
            orders.handle_order(push, connection)
        elif push.attempt == 1:
            raise SlowDown(2)

    subscription = make_subscription(room, push_url="http://127.0.0.1:9/")
    shop = shops([subscription.signing_secret], handler=busy_at_first)
    Subscription.objects.filter(pk=subscription.pk).update(push_url=shop.url)

    busy = order(client, key, room, 7, event_type="shop.busy")
    delivery = wait_for_status(busy, subscription.pk, "delivered", timeout=30)
    first, second = DeliveryAttempt.objects.filter(delivery=delivery).order_by("attempt")
    assert (first.status_code, second.status_code) == (429, 200)
    assert first.next_delay_ms >= 2000
    assert (second.started_at - first.started_at).total_seconds() >= 2

    order(client, key, room, 8, event_type="shop.closed")
    deadline = time.monotonic() + 20
    while subscription.status != "disabled" and time.monotonic() < deadline:
        time.sleep(0.1)
        subscription.refresh_from_db()
    assert subscription.status == "disabled" and "410 Gone" in subscription.status_reason
    assert shop.rows("SELECT count(*) FROM dovecote_inbox") == [(1,)]  # the busy push; the 410 kept nothing


@pytest.mark.urls("tests.receiver_urls")
def test_a_django_receiver_handles_each_push_once_across_a_crash(client: Client, room: Room, key: str,
                                                                 live_server: LiveServer, settings: Any) -> None:
    subscription = make_subscription(room, push_url=f"{live_server.url}/hooks/orders/")
    settings.TEST_PUSH_SECRETS = [subscription.signing_secret]
    receiver_urls.CRASHES[:] = [1]
    try:
        message_id = order(client, key, room, 9)
        assert wait_for_status(message_id, subscription.pk, "delivered").attempts == 2
    finally:
        receiver_urls.CRASHES.clear()
    assert Room.objects.filter(name="order-9").count() == 1
    assert list(InboxMessage.objects.values_list("webhook_id", "attempt")) == [(message_id, 2)]
