"""Consumers past CONSUMERS_PER_CONNECTION go on more connections to the broker (lanes), each reopened on its own.

Artemis restarts every consumer of a connection at each SUBSCRIBE on it, so thousands of push sessions on one
connection cost the broker seconds per wave of session starts (delivery/broker/stomp.py). These tests put two
consumers on a connection, on the real broker, through a TCP proxy the test can cut.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from delivery.broker import BrokerError, Consumer, OutgoingMessage, ReceivedMessage
from delivery.broker.stomp import StompBroker
from tests.services import stomp_url
from tests.tcp_proxy import TcpProxy

from .test_stomp_reconnect import wait_until


@pytest.fixture
def broker(proxy: TcpProxy) -> Iterator[StompBroker]:
    credentials = urlsplit(stomp_url()).netloc.rpartition("@")[0]
    opened = StompBroker(f"stomp://{credentials}@127.0.0.1:{proxy.port}", connect_timeout=5, heartbeat_ms=1000,
                         consumers_per_connection=2)
    yield opened
    opened.close()


@pytest.fixture
def destinations(queues_made: set[str]) -> Callable[[int], list[str]]:
    def make(count: int) -> list[str]:
        names = [f"room-{uuid.uuid4().hex[:10]}::subscription-{uuid.uuid4().hex[:10]}" for _ in range(count)]
        queues_made.update(names)
        return names
    return make


def subscribe_each(broker: StompBroker, destinations: list[str]) -> list[Consumer]:
    """A consumer for each destination, each lane the last one asked for open before the next consumer."""
    consumers = []
    for name in destinations:
        consumers.append(broker.consumer(name, prefetch=5))
        assert wait_until(lambda: not broker._lane_opening, 10), "a lane did not open within 10 s"
    return consumers


def consumers_per_connection(broker: StompBroker) -> list[int]:
    return [len(host._consumers) for host in (broker, *broker._lanes)]


def receive_each(consumers: list[Consumer]) -> list[ReceivedMessage]:
    received = []
    for consumer in consumers:
        message = consumer.receive(5)
        assert message is not None, f"nothing for {consumer.destination}; got {[m.body for m in received]}"
        received.append(message)
    return received


def test_consumers_beyond_a_connections_share_go_on_lanes_and_their_acks_go_together(
    broker: StompBroker, destinations: Callable[[int], list[str]]
) -> None:
    names = destinations(7)
    consumers = subscribe_each(broker, names)

    # The third consumer waits on the full connection while the first lane opens; then each lane fills in turn.
    assert consumers_per_connection(broker) == [3, 3, 1]
    sockets = {id(host._conn) for host in (broker, *broker._lanes)}
    assert len(sockets) == 3

    broker.send_many([OutgoingMessage(name, name.encode()) for name in names])
    received = receive_each(consumers)
    assert [message.body for message in received] == [name.encode() for name in names]
    broker.ack_together([(consumer, [message]) for consumer, message in zip(consumers, received, strict=True)])

    for consumer in consumers:
        consumer.close()
    assert consumers_per_connection(broker) == [0, 0, 0]
    for name in names:  # every ack reached the broker, each on its own connection: nothing comes back
        with broker.consumer(name) as again:
            assert again.receive(0.3) is None, name


def test_a_refused_group_leaves_the_acks_on_other_connections_written(
    broker: StompBroker, destinations: Callable[[int], list[str]]
) -> None:
    names = destinations(4)
    consumers = subscribe_each(broker, names)
    assert consumers_per_connection(broker) == [3, 1]
    broker.send_many([OutgoingMessage(name, b"once") for name in names])
    received = receive_each(consumers)
    consumers[0].ack(received[0])

    with pytest.raises(BrokerError, match="not held"):  # acked already: never sent twice
        broker.ack_together([(consumer, [message]) for consumer, message in zip(consumers, received, strict=True)])

    for consumer in consumers:
        consumer.close()
    for name in names:
        with broker.consumer(name) as again:
            assert again.receive(0.3) is None, name


def test_every_lane_comes_back_after_the_connections_are_cut(
    proxy: TcpProxy, broker: StompBroker, destinations: Callable[[int], list[str]]
) -> None:
    names = destinations(7)
    consumers = subscribe_each(broker, names)
    lanes = list(broker._lanes)
    assert len(lanes) == 2
    generations = [host._generation for host in (broker, *lanes)]

    proxy.cut()
    assert wait_until(lambda: all(host._generation > seen and host.is_connected()
                                  for host, seen in zip((broker, *lanes), generations, strict=True)), 15), \
        [(host._generation, host.is_connected()) for host in (broker, *lanes)]

    broker.send_many([OutgoingMessage(name, b"after") for name in names])
    received = receive_each(consumers)  # each consumer subscribed again on its own connection's new socket
    assert {message.body for message in received} == {b"after"}
    broker.ack_together([(consumer, [message]) for consumer, message in zip(consumers, received, strict=True)])
    assert broker._lanes == lanes  # the same lanes, reopened: none added


def test_closing_the_broker_closes_its_lanes_and_their_consumers(
    broker: StompBroker, destinations: Callable[[int], list[str]]
) -> None:
    consumers = subscribe_each(broker, destinations(3))
    lanes = list(broker._lanes)
    assert len(lanes) == 1

    broker.close()

    assert all(lane._closed for lane in lanes)
    assert not any(lane.is_connected() for lane in lanes)
    for consumer in consumers:
        with pytest.raises(BrokerError, match="closed"):
            consumer.receive(0.1)
