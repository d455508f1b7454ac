"""The broker contract: every implementation (in-memory, STOMP) behaves the same way."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from delivery.broker import (
    EXPIRY_DESTINATION,
    Broker,
    BrokerError,
    BrokerUnavailable,
    OutgoingMessage,
    QueueInUse,
    connect,
)
from tests.services import stomp_url

OpenBroker = Callable[[], Broker]


@pytest.fixture(params=["memory", "stomp"])
def broker_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return f"memory://contract-{uuid.uuid4().hex}"
    return stomp_url()


@pytest.fixture
def open_broker(broker_url: str) -> Iterator[OpenBroker]:
    """Open connections to the broker under test; close them all after the test."""
    brokers: list[Broker] = []

    def open_() -> Broker:
        broker = connect(broker_url, connect_timeout=5)
        brokers.append(broker)
        return broker

    yield open_
    for broker in brokers:
        broker.close()


def receive_all(consumer, count: int, timeout: float = 5.0) -> list[bytes]:
    """Receive and ack `count` messages, failing if one does not arrive within `timeout`."""
    bodies = []
    for _ in range(count):
        message = consumer.receive(timeout)
        assert message is not None, f"only {len(bodies)} of {count} messages arrived"
        consumer.ack(message)
        bodies.append(message.body)
    return bodies


def test_a_sent_message_is_received_and_once_acked_is_gone(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    broker.send(OutgoingMessage(destination, b'{"n": 1}', {"correlation-id": "msg-1"}))

    with broker.consumer(destination) as consumer:
        message = consumer.receive(5)
        assert message is not None
        assert message.body == b'{"n": 1}'
        assert message.destination == destination
        assert message.headers["correlation-id"] == "msg-1"
        assert message.headers["content-type"] == "application/json"
        assert not message.redelivered
        assert message.broker_message_id
        consumer.ack(message)
        assert consumer.receive(0.3) is None


def test_send_many_returns_after_all_receipts_and_every_message_arrives_in_order(
    open_broker: OpenBroker, destination: str
) -> None:
    broker = open_broker()
    bodies = [f"message {n}".encode() for n in range(450)]  # over two of the STOMP broker's chunks of 200

    broker.send_many([OutgoingMessage(destination, body) for body in bodies])

    with open_broker().consumer(destination, prefetch=500) as consumer:
        assert receive_all(consumer, 450) == bodies
        assert consumer.receive(0.3) is None


def test_a_scheduled_delay_is_honoured(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    consumer = broker.consumer(destination)
    started = time.monotonic()

    broker.send(OutgoingMessage(destination, b"later", delay_ms=1000))
    message = consumer.receive(3)
    elapsed = time.monotonic() - started

    assert message is not None and message.body == b"later"
    assert 1.0 <= elapsed < 2.0


def test_a_scheduled_delay_counts_from_the_making_of_the_message_not_its_send(
    open_broker: OpenBroker, destination: str,
) -> None:
    """A send that waited (a reconnection during a failover) must not push its message's due time back."""
    broker = open_broker()
    consumer = broker.consumer(destination)
    made_at = time.monotonic() - 2.5  # as if the send had waited 2.5 s for a broker
    broker.send(OutgoingMessage(destination, b"due in 3 s", delay_ms=3000, made_at=made_at))
    sent = time.monotonic()
    message = consumer.receive(5)
    arrived = time.monotonic()

    assert message is not None and message.body == b"due in 3 s"
    # Due 0.5 s after the send; counted from the send it would have come 3 s after it.
    assert arrived - made_at >= 3.0 - 0.01 and arrived - sent < 2.0, (arrived - made_at, arrived - sent)


def test_a_shorter_delay_overtakes_a_longer_one_sent_earlier(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    broker.send(OutgoingMessage(destination, b"in 500 ms", delay_ms=500))
    broker.send(OutgoingMessage(destination, b"now"))

    with broker.consumer(destination) as consumer:
        assert receive_all(consumer, 2, timeout=3) == [b"now", b"in 500 ms"]


def test_an_expired_message_is_never_delivered(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    expires_at_ms = int(time.time() * 1000) + 300
    broker.send(OutgoingMessage(destination, b"stale", expires_at_ms=expires_at_ms))
    time.sleep(1.0)
    broker.send(OutgoingMessage(destination, b"fresh"))

    with broker.consumer(destination) as consumer:
        assert receive_all(consumer, 1) == [b"fresh"]
        assert consumer.receive(0.5) is None


def test_a_delayed_message_that_expires_during_its_delay_is_never_delivered(
    open_broker: OpenBroker, destination: str
) -> None:
    broker = open_broker()
    consumer = broker.consumer(destination)
    expires_at_ms = int(time.time() * 1000) + 300
    broker.send(OutgoingMessage(destination, b"too late", delay_ms=800, expires_at_ms=expires_at_ms))
    broker.send(OutgoingMessage(destination, b"fresh"))

    assert receive_all(consumer, 1) == [b"fresh"]
    assert consumer.receive(1.5) is None


def test_a_message_not_yet_expired_carries_its_expiry(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    expires_at_ms = int(time.time() * 1000) + 60_000
    broker.send(OutgoingMessage(destination, b"fresh", expires_at_ms=expires_at_ms))

    with broker.consumer(destination) as consumer:
        message = consumer.receive(5)
        assert message is not None
        assert int(message.headers["expires"]) == expires_at_ms
        consumer.ack(message)


def test_headers_with_colons_backslashes_newlines_and_unicode_survive(
    open_broker: OpenBroker, destination: str
) -> None:
    headers = {
        "correlation-id": "evt:42:attempt:3",
        "x-event-type": "order.created",
        "x-note": "a:b\\c\nd é ✓ 日本",
        "content-type": "application/vnd.dovecote+json; charset=utf-8",
    }
    broker = open_broker()
    broker.send(OutgoingMessage(destination, "{\"ü\": 1}".encode(), headers))

    with broker.consumer(destination) as consumer:
        message = consumer.receive(5)
        assert message is not None
        assert {name: message.headers.get(name) for name in headers} == headers
        assert message.body == "{\"ü\": 1}".encode()
        consumer.ack(message)


def test_unacked_messages_come_back_redelivered_when_the_connection_closes(
    open_broker: OpenBroker, destination: str
) -> None:
    open_broker().send(OutgoingMessage(destination, b"work"))
    first = open_broker()
    taken = first.consumer(destination).receive(5)
    assert taken is not None and not taken.redelivered

    first.close()

    again = open_broker().consumer(destination).receive(5)
    assert again is not None
    assert again.body == taken.body
    assert again.redelivered


def test_an_acked_message_is_not_seen_again_after_reconnecting(open_broker: OpenBroker, destination: str) -> None:
    open_broker().send(OutgoingMessage(destination, b"once"))
    first = open_broker()
    consumer = first.consumer(destination)
    message = consumer.receive(5)
    assert message is not None
    consumer.ack(message)

    first.close()

    assert open_broker().consumer(destination).receive(1) is None


def test_a_message_is_acked_at_most_once(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    broker.send_many([OutgoingMessage(destination, b"once"), OutgoingMessage(destination, b"next")])
    consumer = broker.consumer(destination)
    message = consumer.receive(5)
    assert message is not None
    consumer.ack(message)

    with pytest.raises(BrokerError, match="not held"):
        consumer.ack(message)  # Artemis would close the connection on a second ACK: never sent

    following = consumer.receive(5)
    assert following is not None and following.body == b"next"  # the connection is still good
    consumer.ack(following)


def test_the_acks_of_several_consumers_go_together_and_a_refused_group_leaves_the_others_acked(
    open_broker: OpenBroker, destination: str, queues_made: set[str]
) -> None:
    other = destination + "-b"
    queues_made.add(other)
    broker = open_broker()
    broker.send_many([OutgoingMessage(destination, b"a1"), OutgoingMessage(destination, b"a2"),
                      OutgoingMessage(other, b"b1")])
    first, second = broker.consumer(destination, prefetch=10), broker.consumer(other, prefetch=10)
    a1, a2, b1 = first.receive(5), first.receive(5), second.receive(5)
    assert a1 is not None and a2 is not None and b1 is not None
    first.ack(a1)

    with pytest.raises(BrokerError, match="not held"):
        broker.ack_together([(first, [a2]), (first, [a1]), (second, [b1])])  # a1 is acked already: never sent

    first.close()
    second.close()
    for name in (destination, other):  # nothing comes back: a2 and b1 were acked, on a connection still good
        with broker.consumer(name) as again:
            assert again.receive(0.5) is None, name
    broker.send(OutgoingMessage(destination, b"after"))
    with broker.consumer(destination) as after:
        assert receive_all(after, 1) == [b"after"]


def test_an_expired_message_moves_to_the_expiry_destination_with_its_headers(
    open_broker: OpenBroker, destination: str
) -> None:
    """The broker moves a message it finds expired when a consumer would get it (Artemis's periodic scan,
    every 30 s in deploy/artemis/broker.xml, moves those of queues nobody consumes)."""
    broker = open_broker()
    expiry = broker.consumer(EXPIRY_DESTINATION, prefetch=500)
    headers = {"dovecote-delivery-id": uuid.uuid4().hex}
    expires_at_ms = int(time.time() * 1000) + 200
    broker.send(OutgoingMessage(destination, b"too late", headers, expires_at_ms=expires_at_ms))
    while time.time() * 1000 <= expires_at_ms + 50:  # the message's own clock, not a guess at the broker's
        time.sleep(0.05)
    with broker.consumer(destination) as consumer:
        assert consumer.receive(0.3) is None

    deadline = time.monotonic() + 10
    found, others = None, 0
    while found is None and time.monotonic() < deadline:
        message = expiry.receive(0.5)
        if message is None:
            continue
        expiry.ack(message)  # other runs' expired frames share this queue: take them too
        if message.headers.get("dovecote-delivery-id") == headers["dovecote-delivery-id"]:
            found = message
        else:
            others += 1
    assert found is not None and found.body == b"too late", \
        f"not on {EXPIRY_DESTINATION} within 10 s ({others} other expired frames taken meanwhile)"


def test_deleting_a_queue_removes_its_scheduled_messages_too(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    broker.send_many([OutgoingMessage(destination, b"now"), OutgoingMessage(destination, b"soon", delay_ms=800)])
    [stats] = broker.queues(destination)
    assert (stats.destination, stats.messages, stats.scheduled) == (destination, 2, 1)

    assert broker.delete_queue(destination) is True

    assert broker.queues(destination) == []
    assert broker.delete_queue(destination) is False
    time.sleep(1.0)
    with broker.consumer(destination) as consumer:
        assert consumer.receive(0.3) is None


def test_acking_after_the_consumer_closed_fails_and_the_message_returns(
    open_broker: OpenBroker, destination: str
) -> None:
    broker = open_broker()
    broker.send(OutgoingMessage(destination, b"held"))
    consumer = broker.consumer(destination)
    message = consumer.receive(5)
    assert message is not None

    consumer.close()

    with pytest.raises(BrokerError):
        consumer.ack(message)
    again = broker.consumer(destination).receive(5)
    # Not necessarily marked redelivered: Artemis counts a delivery only when the connection
    # closes, not on UNSUBSCRIBE. Dovecote never relies on the flag (its delivery rows count).
    assert again is not None and again.body == b"held"


def test_prefetch_one_lets_a_second_consumer_take_the_next_message(
    open_broker: OpenBroker, destination: str
) -> None:
    broker = open_broker()
    broker.send_many([OutgoingMessage(destination, b"first"), OutgoingMessage(destination, b"second")])
    busy = broker.consumer(destination, prefetch=1)
    held = busy.receive(5)
    assert held is not None

    idle = broker.consumer(destination, prefetch=1)
    other = idle.receive(5)

    assert other is not None
    assert {held.body, other.body} == {b"first", b"second"}
    assert busy.receive(0.3) is None  # its one unacked message fills its prefetch


def test_sends_from_four_threads_on_one_connection_are_all_confirmed(
    open_broker: OpenBroker, destination: str
) -> None:
    broker = open_broker()
    errors: list[BaseException] = []

    def send_batch(thread: int) -> None:
        try:
            for batch in range(5):
                broker.send_many(
                    [OutgoingMessage(destination, f"{thread}-{batch}-{n}".encode()) for n in range(10)]
                )
        except BaseException as error:  # noqa: BLE001 - re-raised below in the test thread
            errors.append(error)

    threads = [threading.Thread(target=send_batch, args=(thread,)) for thread in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert errors == []
    with broker.consumer(destination) as consumer:
        received = receive_all(consumer, 200)
    assert len(set(received)) == 200


def test_connecting_to_a_closed_port_raises_broker_unavailable_naming_the_address() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends
    started = time.monotonic()

    with pytest.raises(BrokerUnavailable, match=f"127.0.0.1:{port}"):
        connect(f"stomp://user:secret@127.0.0.1:{port}", connect_timeout=2)

    assert time.monotonic() - started < 3


def test_a_listening_consumer_is_handed_each_message_as_it_arrives(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    arrived: list[tuple[float, bytes]] = []
    received = threading.Condition()
    consumer = None

    def on_message(message) -> None:
        with received:
            arrived.append((time.monotonic(), message.body))
            received.notify_all()
        consumer.ack(message)

    consumer = broker.consumer(destination, prefetch=1, on_message=on_message)
    started = time.monotonic()
    broker.send_many([OutgoingMessage(destination, f"m{n}".encode()) for n in range(5)]
                     + [OutgoingMessage(destination, b"later", delay_ms=500)])
    with received:
        received.wait_for(lambda: len(arrived) == 6, timeout=5)

    assert [body for _, body in arrived] == [b"m0", b"m1", b"m2", b"m3", b"m4", b"later"]
    assert arrived[-1][0] - started >= 0.5
    with pytest.raises(BrokerError, match="listener"):
        consumer.receive(0.1)
    consumer.close()


def test_a_listening_consumer_gets_no_more_than_its_prefetch_until_it_acks(
    open_broker: OpenBroker, destination: str
) -> None:
    broker = open_broker()
    broker.send_many([OutgoingMessage(destination, f"m{n}".encode()) for n in range(3)])
    held = []
    consumer = broker.consumer(destination, prefetch=1, on_message=held.append)
    time.sleep(0.5)
    assert [m.body for m in held] == [b"m0"]

    consumer.ack(held[0])
    time.sleep(0.5)

    assert [m.body for m in held] == [b"m0", b"m1"]
    consumer.close()
    with broker.consumer(destination) as other:  # what it held unacked went back
        assert sorted(receive_all(other, 2)) == [b"m1", b"m2"]


def test_a_queue_with_a_consumer_is_not_deleted_under_it(open_broker: OpenBroker, destination: str) -> None:
    broker = open_broker()
    broker.send(OutgoingMessage(destination, b"kept"))
    consumer = broker.consumer(destination)

    with pytest.raises(QueueInUse):
        broker.delete_queue(destination)  # Artemis would have cut the consumer's connection off

    assert broker.is_connected()
    consumer.close()
    deadline = time.monotonic() + 5  # the broker handles the UNSUBSCRIBE apart from the management call
    while True:
        try:
            assert broker.delete_queue(destination) is True
            break
        except QueueInUse:
            assert time.monotonic() < deadline
            time.sleep(0.05)


@pytest.mark.parametrize("lines", [
    ["MESSAGE", "destination:room-1::subscription-2", "ack:12,34", "empty:", "colon:a:b:c", "dup:1", "dup:2"],
    ["MESSAGE", "x-note:a\\cb\\\\c\\nd é ✓", "key\\cwith\\ncolon:v", ":no key", "no colon", "trail\\r:x\\ry"],
    ["CONNECTED", "server:ActiveMQ-Artemis/2.40.0 ActiveMQ Artemis Messaging Engine", "heart-beat:0,0"],
])
def test_the_faster_header_parser_reads_headers_as_stomp_py_does(lines: list[str]) -> None:
    from delivery.broker.stomp_wire import STOMP_PY_PARSE_HEADERS, parse_headers

    assert parse_headers(lines, 1) == STOMP_PY_PARSE_HEADERS(lines, 1)


@pytest.mark.parametrize(("command", "headers", "body"), [
    ("SEND", {"destination": "room-1::subscription-2", "persistent": "true", "destination-type": "ANYCAST",
              "receipt": "r-7", "content-type": "application/json", "correlation-id": "order-1",
              "AMQ_SCHEDULED_DELAY": "1000", "expires": "1765000000000"}, b'{"id":"1","data":{"x":1}}'),
    ("SEND", {"destination": "q", "x-note": "a:b\\c\nd\re é ✓", "content-length": "999"}, "é ✓".encode()),
    ("SEND", {"destination": "q", "count": 3, "absent": None}, b"x"),
    ("ACK", {"id": "ID:1d2c-0:1:1"}, b""),
    ("ACK", {}, b""),
])
def test_frames_are_encoded_as_stomp_py_encodes_them(command: str, headers: dict[str, object], body: bytes) -> None:
    import stomp
    from stomp.utils import Frame, convert_frame, pack

    from delivery.broker.stomp_wire import encode_frame

    theirs = dict(headers)
    if body:
        theirs["content-length"] = str(len(body))
    stomp.Connection12([("127.0.0.1", 1)])._escape_headers(theirs)

    assert encode_frame(command, headers, body) == pack(convert_frame(Frame(command, theirs, body)))
