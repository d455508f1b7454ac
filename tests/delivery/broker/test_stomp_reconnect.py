"""The STOMP broker survives a lost connection; tested through a TCP proxy the test can cut."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from delivery.broker import BrokerError, BrokerUnavailable, OutgoingMessage, SendFailed
from delivery.broker.stomp import StompBroker
from tests.services import stomp_url
from tests.tcp_proxy import TcpProxy


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def open_proxied(proxy: TcpProxy) -> Iterator[Callable[..., StompBroker]]:
    """Open StompBrokers that reach the broker through the proxy; close them after the test."""
    brokers: list[StompBroker] = []
    credentials = urlsplit(stomp_url()).netloc.rpartition("@")[0]

    def open_(**options: float) -> StompBroker:
        broker = StompBroker(f"stomp://{credentials}@127.0.0.1:{proxy.port}", **options)
        brokers.append(broker)
        return broker

    yield open_
    for broker in brokers:
        broker.close()


def test_sends_and_consumers_resume_after_the_connection_is_cut(
    proxy: TcpProxy, open_proxied: Callable[..., StompBroker], destination: str
) -> None:
    broker = open_proxied(connect_timeout=5, heartbeat_ms=1000)
    consumer = broker.consumer(destination, prefetch=10)
    broker.send_many([OutgoingMessage(destination, b"before-1"), OutgoingMessage(destination, b"before-2")])
    held = consumer.receive(5)  # before-2 stays buffered in the consumer, also unacked
    assert held is not None and held.body == b"before-1"

    proxy.refusing = True
    proxy.cut()
    assert wait_until(lambda: not broker.is_connected(), 5)
    proxy.refusing = False
    broker.send(OutgoingMessage(destination, b"after"))  # waits for the reconnection

    assert broker.is_connected()
    with pytest.raises(BrokerError):
        consumer.ack(held)  # its ack id died with the old connection
    received = {}
    for _ in range(3):
        message = consumer.receive(5)
        assert message is not None, f"got only {sorted(received)}"
        consumer.ack(message)  # a message buffered from the old connection would fail here
        received[message.body] = message.redelivered
    assert sorted(received) == [b"after", b"before-1", b"before-2"]
    assert received[b"before-1"] is True
    assert consumer.receive(0.3) is None


def test_a_send_fails_after_the_connect_timeout_while_the_broker_is_unreachable(
    proxy: TcpProxy, open_proxied: Callable[..., StompBroker], destination: str
) -> None:
    broker = open_proxied(connect_timeout=1, heartbeat_ms=1000)
    proxy.refusing = True
    proxy.cut()
    assert wait_until(lambda: not broker.is_connected(), 5)
    started = time.monotonic()

    with pytest.raises(SendFailed) as failure:
        broker.send(OutgoingMessage(destination, b"nowhere to go"))

    assert 1.0 <= time.monotonic() - started < 2.5
    assert failure.value.confirmed == ()
    proxy.refusing = False
    assert wait_until(broker.is_connected, 10)
    broker.send(OutgoingMessage(destination, b"back"))


def test_sends_without_receipts_fail_after_the_receipt_timeout_yet_may_still_arrive(
    proxy: TcpProxy, open_proxied: Callable[..., StompBroker], destination: str
) -> None:
    broker = open_proxied(connect_timeout=2, receipt_timeout=0.5, heartbeat_ms=10_000)
    consumer = broker.consumer(destination)
    proxy.frozen = True
    started = time.monotonic()

    with pytest.raises(SendFailed) as failure:
        broker.send_many([OutgoingMessage(destination, b"one"), OutgoingMessage(destination, b"two")])

    assert 0.5 <= time.monotonic() - started < 1.5
    assert failure.value.confirmed == ()
    proxy.frozen = False
    # The frames were only held up: an unconfirmed send may still be delivered.
    bodies = [consumer.receive(5) for _ in range(2)]
    assert [message.body for message in bodies if message] == [b"one", b"two"]


def test_sends_awaiting_receipts_fail_as_soon_as_the_connection_drops(
    proxy: TcpProxy, open_proxied: Callable[..., StompBroker], destination: str
) -> None:
    broker = open_proxied(connect_timeout=2, receipt_timeout=10, heartbeat_ms=10_000)
    proxy.frozen = True
    outcome: dict[str, object] = {}

    def send() -> None:
        try:
            broker.send(OutgoingMessage(destination, b"in flight"))
        except SendFailed as error:
            outcome["error"], outcome["at"] = error, time.monotonic()

    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(0.3)
    cut_at = time.monotonic()
    proxy.cut()
    sender.join(5)
    proxy.frozen = False

    assert isinstance(outcome.get("error"), SendFailed)
    assert outcome["at"] - cut_at < 2  # type: ignore[operator]


def test_a_silent_connection_is_detected_by_heartbeats_and_replaced(
    proxy: TcpProxy, open_proxied: Callable[..., StompBroker], destination: str
) -> None:
    broker = open_proxied(connect_timeout=2, heartbeat_ms=500)
    consumer = broker.consumer(destination)
    proxy.frozen = True

    assert wait_until(lambda: not broker.is_connected(), 5)
    proxy.frozen = False
    assert wait_until(broker.is_connected, 10)
    broker.send(OutgoingMessage(destination, b"after the stall"))

    message = consumer.receive(5)
    assert message is not None and message.body == b"after the stall"
    consumer.ack(message)


def test_connect_gives_up_on_a_server_that_never_answers() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # completes TCP handshakes, never speaks
        port = silent.getsockname()[1]
        started = time.monotonic()

        with pytest.raises(BrokerUnavailable, match=f"127.0.0.1:{port}"):
            StompBroker(f"stomp://user:secret@127.0.0.1:{port}", connect_timeout=0.5)

        assert time.monotonic() - started < 2
