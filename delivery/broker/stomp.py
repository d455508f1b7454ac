"""Apache Artemis over STOMP 1.2, on stomp.py: publisher confirms, consumers, the management API.

`StompBroker` is the `Broker` for `stomp://` URLs. It keeps its connection open and reopened
through `StompConnection` (stomp_connection.py: the failover list, generations, reconnection),
writes frames in the wire format of stomp_wire.py and hands MESSAGE frames to its consumers
(stomp_consumer.py). A send whose RECEIPT the lost broker never gave counts as not done
(SendFailed), as with any lost connection. Consumers beyond `consumers_per_connection` go on more
connections to the same brokers (its lanes, `_host_for_consumer`), each reopened on its own.

What Artemis does that this package relies on (docs/architecture.md#the-broker, each fact
covered by tests/delivery/broker/test_artemis.py):
- destinations are fully qualified queue names, `room-3::subscription-7` (address `room-3`,
  anycast queue `subscription-7`), auto-created on the first SEND or SUBSCRIBE;
- a RECEIPT for a persistent SEND comes after the journal write of that SEND and of every SEND the
  connection wrote before it (one storage context per connection, whose completions run in order), so
  `send_many` asks for one receipt per chunk of frames, on the chunk's last;
- a SEND the broker refuses is answered with ERROR, in order with the receipts, and the connection is
  closed; the ERROR names the frame only if it asked for a receipt, so every chunk still awaited on the
  connection fails when it comes (a receipt may still come for frames read before its close);
- `AMQ_SCHEDULED_DELAY` is honoured per message, by a timer per due time;
- `expires` moves a message that outlives it to the expiry address (EXPIRY_DESTINATION);
- flow control is `consumer-window-size`, in bytes of encoded frames;
- NACK is an ACK (the message is gone), so it is never sent; an ACK for a message the
  connection does not hold is answered with ERROR and the connection is closed, so
  consumers send each ACK at most once;
- a SUBSCRIBE restarts every consumer of its connection (`StompSession.addSubscription` calls
  `ServerSession.start`), so its cost grows with the consumers already there (a cost, so measured,
  not tested: docs/architecture.md).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections.abc import Sequence

import stomp
from stomp.exception import StompException
from stomp.utils import Frame

from delivery.broker.artemis import Management
from delivery.broker.base import (
    Broker,
    BrokerError,
    BrokerUnavailable,
    Consumer,
    OnMessage,
    OutgoingMessage,
    QueueStats,
    ReceivedMessage,
    SendFailed,
)
from delivery.broker.stomp_connection import StompConnection
from delivery.broker.stomp_consumer import StompConsumer
from delivery.broker.stomp_wire import encode_frame, received_message, send_headers

logger = logging.getLogger("delivery.broker")

WRITE_CHUNK = 200  # frames written to the socket at once, and confirmed by one receipt on the last
# Consumers a connection takes before more go on a lane (another connection), unless the caller says otherwise
# (settings.STOMP_CONSUMERS_PER_CONNECTION). Artemis's time for a SUBSCRIBE grows with the consumers already on its
# connection: 2,000 subscribed on one took 2.4-4.5 s, on eight 1.0 s.
CONSUMERS_PER_CONNECTION = 256
LANE_RETRY_S = 10.0  # after a lane could not be opened, consumers stay where they are this long before the next try


class _Batch:
    """The receipts one `send_many` call waits for: one per chunk of frames, confirming the whole chunk."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.confirmed: set[int] = set()
        self.failures: dict[int, str] = {}
        self._settled = threading.Condition()

    def confirm(self, indices: range) -> None:
        with self._settled:
            self.confirmed.update(indices)
            self._settled.notify_all()

    def fail(self, indices: range, reason: str) -> None:
        with self._settled:
            for index in indices:
                if index not in self.confirmed:
                    self.failures.setdefault(index, reason)
            self._settled.notify_all()

    def wait(self, timeout: float) -> None:
        """Wait until every send is confirmed or failed, or `timeout` seconds pass."""
        with self._settled:
            self._settled.wait_for(lambda: len(self.confirmed) + len(self.failures) >= self.size, timeout)

    def failure_reason(self) -> str:
        if self.failures:
            return next(iter(self.failures.values()))
        return "no receipt within the receipt timeout"


class StompBroker(StompConnection, Broker):
    """One STOMP 1.2 connection with publisher confirms, per-consumer prefetch and reconnection."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 10.0,
        receipt_timeout: float = 10.0,
        heartbeat_ms: int = 10_000,
        consumers_per_connection: int = CONSUMERS_PER_CONNECTION,
        opens_lanes: bool = True,
    ) -> None:
        super().__init__(url, connect_timeout=connect_timeout, heartbeat_ms=heartbeat_ms)
        self._receipt_timeout = receipt_timeout
        self._subscription_ids = itertools.count(1)

        self._consumers_per_connection = consumers_per_connection
        self._opens_lanes = opens_lanes  # a lane itself opens none
        self._lanes_lock = threading.Lock()  # guards the fields below
        self._lanes: list[StompBroker] = []  # more connections to the same brokers, for consumers only
        self._lane_opening = False
        self._lane_retry_at = 0.0  # monotonic; after a lane could not be opened

        self._receipts_lock = threading.Lock()
        self._receipts: dict[str, tuple[_Batch, range, int]] = {}  # receipt id -> (batch, its chunk, generation)
        self._receipt_prefix = uuid.uuid4().hex[:12]
        self._receipt_ids = itertools.count(1)

        self._management = Management(self.host, self.port, self._login, self._passcode, use_ssl=self._use_ssl,
                                      timeout=connect_timeout)
        self._start()

    def close(self) -> None:
        with self._state:
            if self._closed:
                return
            self._closed, self._up = True, False
            conn, listener = self._conn, self._listener
            consumers = list(self._consumers.values())
            self._consumers.clear()
            self._state.notify_all()
        with self._lanes_lock:
            lanes, self._lanes = self._lanes, []
        for lane in lanes:
            lane.close()
        self._closing.set()
        self._lost.set()
        for consumer in consumers:
            consumer.closed = True
            consumer.discard_inbox()
        self._fail_receipts(None, "broker connection closed")
        if conn is not None and listener is not None:
            self._disconnect(conn, listener)
        self._management.close()

    # -- management ----------------------------------------------------------------------

    def delete_queue(self, destination: str) -> bool:
        """Destroy the queue of `room-3::subscription-7` (its consumers and scheduled messages too)."""
        _, _, queue_name = destination.rpartition("::")
        return self._management.destroy_queue(queue_name)

    def queues(self, name_contains: str = "") -> list[QueueStats]:
        # Artemis filters on the queue's own name: the part after `::` when one is given.
        queue_name = name_contains.partition("::")[2]
        return [stats for stats in self._management.queues(queue_name) if name_contains in stats.destination]

    def _failed_over(self, host: str, port: int) -> None:
        self._management.point_at(host, port)

    # -- sending -------------------------------------------------------------------------

    def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        if not messages:
            return
        deadline = time.monotonic() + self._connect_timeout
        while True:
            conn, generation = self._wait_until_up(deadline)
            batch, receipts = self._expect_receipts(len(messages), generation)
            try:
                if self._write_sends(conn, messages, receipts, batch) == 0:
                    self._on_connection_lost(generation)
                    if time.monotonic() < deadline:
                        continue  # nothing left this process, so the batch can go again on the next connection
                batch.wait(self._receipt_timeout)
            finally:
                self._forget_receipts(receipts)
            break
        if len(batch.confirmed) < len(messages):
            raise SendFailed(
                f"{len(messages) - len(batch.confirmed)} of {len(messages)} sends to {self.address} "
                f"not confirmed: {batch.failure_reason()}",
                sorted(batch.confirmed),
            )

    def _expect_receipts(self, count: int, generation: int) -> tuple[_Batch, dict[int, str]]:
        """Register the receipts of `count` frames before they are written, so none can be missed.

        One receipt per chunk of WRITE_CHUNK frames (the frames of one socket write), asked for by its last
        frame. Return each such frame's index with its receipt id.
        """
        chunks = [range(start, min(count, start + WRITE_CHUNK)) for start in range(0, count, WRITE_CHUNK)]
        receipts = {chunk[-1]: f"{self._receipt_prefix}-{next(self._receipt_ids)}" for chunk in chunks}
        batch = _Batch(count)
        with self._receipts_lock:
            for chunk in chunks:
                self._receipts[receipts[chunk[-1]]] = (batch, chunk, generation)
        return batch, receipts

    def _forget_receipts(self, receipts: dict[int, str]) -> None:
        with self._receipts_lock:
            for receipt in receipts.values():
                self._receipts.pop(receipt, None)

    def _write_sends(
        self, conn: stomp.Connection12, messages: Sequence[OutgoingMessage], receipts: dict[int, str], batch: _Batch
    ) -> int:
        """Write every SEND frame before waiting for any receipt (pipelining); return how many were written.

        The frames go in one socket write per WRITE_CHUNK frames: a write per frame releases and retakes
        the GIL each time, which a busy process pays for in latency. Only the frames in `receipts` ask for
        one, which Artemis gives once every frame before them is stored too: a receipt per frame cost the
        broker about 20 µs of CPU and this process about 10 (a scratch script of 5,000 sends, 2026-12-07).
        """
        sent = 0
        for start in range(0, len(messages), WRITE_CHUNK):
            chunk = messages[start:start + WRITE_CHUNK]
            payload = b"".join(encode_frame("SEND", {**send_headers(message, receipts.get(index)),
                                                     "destination": message.destination}, message.body)
                               for index, message in enumerate(chunk, start))
            try:
                conn.transport.send(payload)
            except (StompException, OSError) as error:
                batch.fail(range(sent, len(messages)), f"could not write to {self.address}: {error!r}")
                return sent
            sent = start + len(chunk)
        return sent

    def _on_receipt(self, receipt: str) -> None:
        with self._receipts_lock:
            entry = self._receipts.pop(receipt, None)
        if entry is not None:
            batch, chunk, _ = entry
            batch.confirm(chunk)

    def _on_error(self, generation: int, frame: Frame) -> None:
        reason = frame.headers.get("message", "ERROR frame")
        logger.error("STOMP broker at %s sent ERROR: %s", self.address, reason)
        # The broker closes the connection after an ERROR (STOMP 1.2), which names the refused frame only if it
        # asked for a receipt: every chunk still awaited on the connection fails now (a receipt may yet come for
        # frames read before the refused one), and the next sends go on a new connection.
        self._fail_receipts(generation, f"the broker refused a send: {reason}")
        self._on_connection_lost(generation)

    def _fail_receipts(self, generation: int | None, reason: str) -> None:
        """Fail the receipts awaited on `generation` (None: all of them); they can no longer arrive."""
        with self._receipts_lock:
            lost = [key for key, (_, _, gen) in self._receipts.items() if generation is None or gen == generation]
            entries = [self._receipts.pop(key) for key in lost]
        for batch, chunk, _ in entries:
            batch.fail(chunk, reason)

    # -- consuming -----------------------------------------------------------------------

    def consumer(self, destination: str, *, prefetch: int = 100, on_message: OnMessage | None = None) -> Consumer:
        if prefetch < 1:
            raise ValueError("prefetch must be at least 1")
        return self._host_for_consumer()._subscribe_consumer(destination, prefetch, on_message)

    def _subscribe_consumer(self, destination: str, prefetch: int, on_message: OnMessage | None) -> StompConsumer:
        consumer = StompConsumer(self, destination, prefetch, f"sub-{next(self._subscription_ids)}", on_message)
        with self._state:
            if self._closed:
                raise BrokerError(f"the connection to {self.address} is closed")
            self._consumers[consumer.subscription_id] = consumer
            conn, up = self._conn, self._up
        # While down, the reconnector subscribes it along with the others.
        if up and conn is not None:
            self._subscribe(conn, consumer)
        return consumer

    def _host_for_consumer(self) -> StompBroker:
        """The connection a new consumer goes on: the first with fewer than `consumers_per_connection`, this first.

        Artemis restarts every consumer of a connection at each SUBSCRIBE on it, so a push worker with
        thousands of sessions on one connection made the broker spend seconds on each wave of session
        starts, and as long again resubscribing them all after a reconnection. When every connection is
        full, more (lanes) are opened in the background until one has room, without keeping the caller
        (an event loop) waiting; until then, consumers go on the connection with the fewest. A lane reconnects
        and fails over on its own, like this connection; lanes stay open until this connection closes.
        """
        with self._lanes_lock:
            hosts: list[StompBroker] = [self, *self._lanes]
            for host in hosts:
                if len(host._consumers) < self._consumers_per_connection:
                    return host
            if self._opens_lanes and not self._lane_opening and time.monotonic() >= self._lane_retry_at:
                self._lane_opening = True
                threading.Thread(target=self._open_lanes, name=f"stomp-lane-{self.address}", daemon=True).start()
            return min(hosts, key=lambda host: len(host._consumers))

    def _open_lanes(self) -> None:
        """Open lanes, one after another, until a connection has room (a burst of consumers may fill each)."""
        while True:
            lane: StompBroker | None = None
            try:
                lane = StompBroker(self.url, connect_timeout=self._connect_timeout,
                                   receipt_timeout=self._receipt_timeout, heartbeat_ms=self._heartbeat_ms,
                                   consumers_per_connection=self._consumers_per_connection, opens_lanes=False)
            except BrokerUnavailable as error:
                logger.warning("could not open another connection for consumers (%s); trying again in %g s",
                               error, LANE_RETRY_S)
            with self._lanes_lock:
                closed = self._closed
                if lane is None:
                    self._lane_retry_at = time.monotonic() + LANE_RETRY_S
                elif not closed:
                    self._lanes.append(lane)
                    logger.info("opened connection %d for consumers to the STOMP broker at %s",
                                len(self._lanes) + 1, lane.address)
                full = all(len(host._consumers) >= self._consumers_per_connection for host in (self, *self._lanes))
                done = lane is None or closed or not full
                self._lane_opening = not done
            if closed and lane is not None:
                lane.close()
            if done:
                return

    def _unsubscribe(self, consumer: StompConsumer) -> None:
        with self._state:
            self._consumers.pop(consumer.subscription_id, None)
            conn, up = self._conn, self._up
        consumer.closed = True
        consumer.discard_inbox()
        if up and conn is not None:
            try:
                conn.unsubscribe(id=consumer.subscription_id)
            except (StompException, OSError):
                logger.debug("UNSUBSCRIBE not sent; the broker drops the subscription with the connection")

    def _on_message(self, generation: int, frame: Frame) -> None:
        consumer = self._consumers.get(frame.headers.get("subscription", ""))
        if consumer is None:
            # Its consumer closed while the frame was in flight; unacked, so the broker redelivers it.
            return
        consumer.deliver(received_message(consumer.destination, frame, generation))

    def _check_ackable(self, consumer: StompConsumer, message: ReceivedMessage) -> stomp.Connection12:
        """Return the connection `message` can be settled on; raise BrokerError if there is none."""
        if consumer.closed:
            raise BrokerError(f"consumer of {consumer.destination} is closed; the message will be redelivered")
        conn, generation, up = self._current()
        if not up or conn is None or getattr(message, "generation", None) != generation:
            raise BrokerError("message came on an earlier connection; the broker will redeliver it")
        return conn

    def ack_together(self, groups: Sequence[tuple[Consumer, Sequence[ReceivedMessage]]]) -> None:
        """Send the ACK frames of several consumers' messages, one write per connection, each message at most once.

        A push engine records the successes of many sessions in one statement; one write for all their
        consumers, not one each, spares a system call and a wake-up of the broker's reader per subscription
        (a fan-out's record of 16 successes held 16 consumers). A group that cannot be acked (a message not held,
        a closed consumer, a message of an earlier connection) is left out, its messages still held, and
        BrokerError is raised once the others are written.
        """
        with self._lanes_lock:
            hosts: list[StompBroker] = [self, *self._lanes]
        by_host: dict[StompBroker, list[tuple[StompConsumer, Sequence[ReceivedMessage]]]] = {}
        refused: BrokerError | None = None
        for consumer, messages in groups:
            owner = next((host for host in hosts if getattr(consumer, "_broker", None) is host), None)
            if owner is None or not isinstance(consumer, StompConsumer):
                refused = refused or BrokerError(f"the consumer of {consumer.destination} is not this connection's")
                continue
            by_host.setdefault(owner, []).append((consumer, messages))
        for host, own in by_host.items():
            try:
                host._ack_on_this_connection(own)
            except BrokerError as error:
                refused = refused or error
        if refused is not None:
            raise refused

    def _ack_on_this_connection(self, groups: Sequence[tuple[StompConsumer, Sequence[ReceivedMessage]]]) -> None:
        """Write the ACK frames of this connection's consumers in one write, as `ack_together` says."""
        taken: list[tuple[StompConsumer, Sequence[ReceivedMessage]]] = []
        refused: BrokerError | None = None
        conn = None
        for consumer, messages in groups:
            try:
                consumer._take_held(messages)
            except BrokerError as error:
                refused = refused or error
                continue
            try:
                for message in messages:
                    conn = self._check_ackable(consumer, message)
            except BrokerError as error:
                consumer._give_back(messages)
                refused = refused or error
                continue
            taken.append((consumer, messages))
        if taken and conn is not None:
            try:
                conn.transport.send(b"".join(encode_frame("ACK", {"id": message.ack_id})
                                             for _, messages in taken for message in messages))
            except (StompException, OSError) as error:
                for consumer, messages in taken:
                    consumer._give_back(messages)
                raise BrokerError(f"ACK not sent to {self.address}; the messages will be redelivered") from error
        if refused is not None:
            raise refused
