"""Receivers that close the connection: each attempt is recorded, its slot freed, the subscription goes on.

A receiver may close without a reply, answer HTTP/1.0 without a length (the body ends at the
close), or answer an error with `Connection: close` and no length. Each is a real socket server on
loopback. Through a real push subscription (worker, broker, database) each attempt ends recorded
(failed, or delivered for the valid HTTP/1.0 answer), the later messages are still delivered, and
the subscription can be deleted (its session ended, its queue goes).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.test import Client

from delivery.broker.shared import shared_broker
from delivery.models import Delivery, DeliveryAttempt
from delivery.transports import PushRequest, post_once
from rooms.models import ApiKey
from tests.delivery.push.test_subscription_pace import publish_batch
from tests.delivery.test_push_transport import RawServer
from tests.factories import make_event_type, make_room, make_subscription

Outcome = DeliveryAttempt.Outcome
Handle = Callable[[socket.socket], None]
NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"


def close_at_once(conn: socket.socket) -> None:
    """Read the request, then close without a word."""


def http10_without_length(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")


def http10_body_to_the_close(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
    time.sleep(0.05)  # the body comes after the head, and ends where the connection does
    conn.sendall(b"thanks")


def error_then_close(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n")


def close_mid_head(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-")


# name -> (receiver, outcome, status code, error)
RECEIVERS: dict[str, tuple[Handle, str, int | None, str]] = {
    "closes without a reply": (close_at_once, Outcome.CONNECTION_ERROR, None,
                               "ConnectionResetError: the receiver closed the connection without answering"),
    "HTTP/1.0 200 without length or body": (http10_without_length, Outcome.SUCCESS, 200, ""),
    "HTTP/1.0 200 with a body read to the close": (http10_body_to_the_close, Outcome.SUCCESS, 200, ""),
    "500 with Connection: close and no length": (error_then_close, Outcome.FAILURE, 500, "HTTP 500:"),
    "closes in the middle of the head": (close_mid_head, Outcome.CONNECTION_ERROR, None,
                                         ("ResponseError: the receiver closed the connection in the middle of its "
                                          "response head")),
}


def misbehaving_first(count: int, handle: Handle) -> Handle:
    """Answer the first `count` requests with `handle`, the rest with 204."""
    lock, served = threading.Lock(), [0]

    def answer(conn: socket.socket) -> None:
        with lock:
            served[0] += 1
            n = served[0]
        if n <= count:
            handle(conn)
        else:
            conn.sendall(NO_CONTENT)
    return answer


@pytest.fixture
def raw_servers() -> Iterator[Callable[[Handle], RawServer]]:
    started: list[RawServer] = []

    def start(handle: Handle) -> RawServer:
        started.append(RawServer(handle))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.mark.parametrize("name", RECEIVERS)
def test_the_transport_turns_each_closing_receiver_into_an_outcome(
        raw_servers: Callable[[Handle], RawServer], name: str) -> None:
    handle, outcome, status_code, error = RECEIVERS[name]
    receiver = raw_servers(handle)

    result = post_once(PushRequest(url=f"http://127.0.0.1:{receiver.port}/hook", body=b"{}", message_id="m-1",
                                   correlation_id="c-1", attempt=1, signing_secret="whsec_" + "A" * 44,
                                   timeout_ms=5000))

    assert (result.outcome, result.status_code, result.error) == (outcome, status_code, error)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("worker")
@pytest.mark.parametrize("name", [name for name in RECEIVERS if name != "closes in the middle of the head"])
def test_a_receiver_closing_the_connection_never_wedges_its_subscription(
        client: Client, raw_servers: Callable[[Handle], RawServer], name: str) -> None:
    handle, outcome, status_code, error = RECEIVERS[name]
    receiver = raw_servers(misbehaving_first(2, handle))
    room = make_room(delivery_attempts=0)  # one try: a failed attempt is settled (dead-lettered) at once
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=f"http://127.0.0.1:{receiver.port}/hook", max_in_flight=2)

    publish_batch(client, key, room, 2)  # both slots go to the receiver's two bad answers
    first_two = wait_for_settled(subscription.pk, 2)
    publish_batch(client, key, room, 1)  # only deliverable if both slots were freed
    everything = wait_for_settled(subscription.pk, 3)

    attempts = list(DeliveryAttempt.objects.filter(delivery__subscription=subscription)
                    .order_by("started_at").values_list("outcome", "status_code", "error"))
    assert attempts[:2] == [(outcome, status_code, error)] * 2, attempts
    assert [d.status for d in first_two] == ["delivered" if outcome == Outcome.SUCCESS else "dead_lettered"] * 2
    assert sorted(d.status for d in everything if d not in first_two) == ["delivered"], everything
    response = client.delete(f"/api/v1/subscriptions/{subscription.pk}/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200, response.content
    wait_for_queue_gone(subscription.destination)


def wait_for_settled(subscription_id: int, count: int, timeout: float = 30.0) -> list[Delivery]:
    """Wait until `count` deliveries of the subscription are settled; return them, oldest first."""
    deadline = time.monotonic() + timeout
    while True:
        deliveries = list(Delivery.objects.filter(subscription_id=subscription_id).order_by("pk"))
        settled = [d for d in deliveries if d.status in ("delivered", "dead_lettered")]
        if len(settled) >= count:
            return settled
        assert time.monotonic() < deadline, (
            f"{len(settled)} of {count} deliveries settled after {timeout} s: "
            f"{[(d.pk, d.status, d.attempts, d.last_error) for d in deliveries]}")
        time.sleep(0.05)


def wait_for_queue_gone(destination: str, timeout: float = 60.0) -> None:
    """Wait until the deleted subscription's queue has left the broker (its session's consumer closed first)."""
    deadline = time.monotonic() + timeout
    while queues := shared_broker().queues(destination):
        assert time.monotonic() < deadline, f"the queue is still on the broker after {timeout} s: {queues}"
        time.sleep(0.2)
