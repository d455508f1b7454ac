"""Apache Artemis over STOMP 1.2, on stomp.py.

One `StompBroker` holds one STOMP connection and replaces it when it drops: a background
thread reconnects with exponential backoff and subscribes the live consumers again. Every
frame read from a connection is tagged with that connection's generation, so messages and
acks that belong to a dead connection are recognised and refused instead of misrouted.

The URL may name several brokers, a failover list (`parse_stomp_url`): an Artemis primary and
its backup (deploy/artemis/: shared store, so the backup serves the primary's journal once it
holds the lock). Each (re)connection tries them in turn from the one last used, so a client
follows the pair to whichever broker is live; a send whose RECEIPT the lost broker never gave
counts as not done (SendFailed), as with any lost connection.

What Artemis does that this module relies on (docs/architecture.md#the-broker, each fact
covered by tests/test_artemis.py):
- destinations are fully qualified queue names, `room-3::subscription-7` (address `room-3`,
  anycast queue `subscription-7`), auto-created on the first SEND or SUBSCRIBE;
- a RECEIPT for a persistent SEND comes after the journal write;
- `AMQ_SCHEDULED_DELAY` is honoured per message, by a timer per due time;
- `expires` moves a message that outlives it to the expiry address (EXPIRY_DESTINATION);
- flow control is `consumer-window-size`, in bytes of encoded frames;
- NACK is an ACK (the message is gone), so it is never sent; an ACK for a message the
  connection does not hold is answered with ERROR and the connection is closed, so
  consumers send each ACK at most once.
"""

from __future__ import annotations

import itertools
import logging
import queue
import re
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlsplit

import stomp
import stomp.utils
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

logger = logging.getLogger("delivery.broker")

DEFAULT_PORTS = {"stomp": 61613, "stomp+ssl": 61614}


@dataclass(frozen=True)
class StompUrl:
    """A STOMP URL read: the scheme and credentials, and the brokers to try, in order."""

    scheme: str
    login: str | None
    passcode: str | None
    brokers: tuple[tuple[str, int], ...]


def parse_stomp_url(url: str) -> StompUrl:
    """Read `stomp://user:pass@host:port`, or a failover list `stomp://user:pass@primary:61613,backup:61613`.

    After the first comma each entry is `host:port` (`[v6]:port`) or a whole URL of the same scheme;
    they share the first entry's credentials unless they give their own (all must then agree).
    Raises ValueError naming the entry at fault.
    """
    first, *others = [entry.strip() for entry in url.split(",")]
    parts = urlsplit(first)
    if parts.scheme not in DEFAULT_PORTS:
        raise ValueError(f"not a STOMP URL: {url!r}")
    brokers = [_host_port(parts, first)]
    for entry in others:
        extra = urlsplit(entry if "://" in entry else f"//{entry}")
        if extra.scheme not in ("", parts.scheme) or (extra.username and extra.username != parts.username):
            raise ValueError(f"{entry!r} in the STOMP failover list must use {parts.scheme}:// and the first "
                             f"entry's user")
        brokers.append(_host_port(extra, entry, DEFAULT_PORTS[parts.scheme]))
    return StompUrl(parts.scheme, unquote(parts.username) if parts.username else None,
                    unquote(parts.password) if parts.password else None, tuple(brokers))


def _host_port(parts: SplitResult, entry: str, default_port: int | None = None) -> tuple[str, int]:
    if not parts.hostname:
        raise ValueError(f"{entry!r} in the STOMP URL names no host")
    try:
        port = parts.port or default_port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise ValueError(f"{entry!r} in the STOMP URL has a port that is not a number from 0 to 65535") from None
    return parts.hostname, port
_ESCAPED = re.compile(r"\\.")


def parse_headers(lines: list[str], offset: int = 0) -> dict[str, str]:
    """stomp.py's header parser, minus its two regex substitutions per header when nothing is escaped.

    The reader thread parses every MESSAGE frame's dozen headers; the substitutions were most of its
    time. Same results (tests/test_broker_contract.py compares them on escaped and plain headers).
    """
    headers: dict[str, str] = {}
    for line in lines[offset:]:
        key, colon, value = line.partition(":")
        if not colon or not key:
            continue
        if "\\" in key:
            key = _ESCAPED.sub(stomp.utils._unescape_header, key)
        if key not in headers:
            headers[key] = _ESCAPED.sub(stomp.utils._unescape_header, value) if "\\" in value else value
    return headers


STOMP_PY_PARSE_HEADERS = stomp.utils.parse_headers
stomp.utils.parse_headers = parse_headers  # stomp.py 9.0.0 (pinned) looks it up at every frame

RECONNECT_FIRST_DELAY = 0.1
WRITE_CHUNK = 200  # frames written to the socket at once
RECONNECT_MAX_DELAY = 5.0
DISCONNECT_GRACE = 2.0
# Artemis counts a consumer's window in bytes of encoded MESSAGE frames; a Dovecote frame
# (push envelope and about 600 bytes of headers) is about 2 KB.
WINDOW_BYTES_PER_MESSAGE = 2048
# Sent with every SEND and SUBSCRIBE, so the queue is point-to-point whatever the broker's defaults.
ANYCAST = "ANYCAST"
# Headers Artemis adds to each delivery (or copies from the SEND): they describe the
# delivery, not the message.
DELIVERY_HEADERS = frozenset(
    {
        "ack",
        "content-length",
        "destination",
        "destination-type",
        "ingress-timestamp",
        "message-id",
        "persistent",
        "priority",
        "receipt",
        "redelivered",
        "subscription",
        "timestamp",
    }
)


@dataclass(frozen=True)
class StompMessage(ReceivedMessage):
    """A received message that remembers which connection delivered it (its ack id is only valid there)."""

    generation: int = field(default=0, compare=False)


class _Batch:
    """The receipts one `send_many` call waits for."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.confirmed: set[int] = set()
        self.failures: dict[int, str] = {}
        self._settled = threading.Condition()

    def confirm(self, index: int) -> None:
        with self._settled:
            self.confirmed.add(index)
            self._settled.notify_all()

    def fail(self, index: int, reason: str) -> None:
        with self._settled:
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


class _Listener(stomp.ConnectionListener):
    """Pass one connection's frames to its broker, tagged with the connection's generation."""

    def __init__(self, broker: StompBroker, generation: int) -> None:
        self.broker = broker
        self.generation = generation
        self.settled = threading.Event()  # CONNECTED, ERROR before it, or the socket closed
        self.gone = threading.Event()  # the socket closed
        self.connected = False
        self.error = ""

    def on_connected(self, frame: Frame) -> None:
        self.connected = True
        self.broker.server = frame.headers.get("server", "")
        self.settled.set()

    def on_error(self, frame: Frame) -> None:
        if not self.connected:
            self.error = frame.headers.get("message", "refused")
            self.settled.set()
        self.broker._on_error(frame)

    def on_receipt(self, frame: Frame) -> None:
        self.broker._on_receipt(frame.headers.get("receipt-id", ""))

    def on_message(self, frame: Frame) -> None:
        self.broker._on_message(self.generation, frame)

    def on_disconnected(self) -> None:
        self.gone.set()
        self.settled.set()
        self.broker._on_connection_lost(self.generation)

    def on_heartbeat_timeout(self) -> None:
        self.on_disconnected()


class StompConsumer(Consumer):
    """One SUBSCRIBE with client-individual acks; MESSAGE frames for it land in its inbox."""

    def __init__(self, broker: StompBroker, destination: str, prefetch: int, subscription_id: str,
                 on_message: OnMessage | None = None) -> None:
        self.destination = destination
        self.prefetch = prefetch
        self.subscription_id = subscription_id
        self.closed = False
        self._listener = on_message
        self._broker = broker
        self._inbox: queue.Queue[StompMessage] = queue.Queue()
        self._held: set[str] = set()  # ack ids handed out and not yet acked, on the current connection
        self._held_lock = threading.Lock()

    def receive(self, timeout: float) -> ReceivedMessage | None:
        if self._listener is not None:
            raise BrokerError(f"the consumer of {self.destination} hands its messages to a listener")
        deadline = time.monotonic() + timeout
        while True:
            if self.closed:
                raise BrokerError(f"consumer of {self.destination} is closed")
            try:
                message = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                return None
            if not self._broker._is_current(message.generation):
                continue  # delivered on a dead connection: its ack id is void and the broker redelivers it
            with self._held_lock:
                self._held.add(message.ack_id)
            return message

    def ack(self, message: ReceivedMessage) -> None:
        """Send ACK for `message` (written to the socket, not confirmed by a receipt).

        Each message is acked at most once: Artemis answers an ACK for a message it does not
        hold on this connection with ERROR and closes the connection, so a second ACK (or one
        for a message this consumer never handed out) raises BrokerError instead of being sent.
        """
        self.ack_many([message])

    def ack_many(self, messages: Sequence[ReceivedMessage]) -> None:
        """Ack several messages in one socket write (each at most once, as `ack` says)."""
        with self._held_lock:
            if unknown := [m.ack_id for m in messages if m.ack_id not in self._held]:
                raise BrokerError(f"message {unknown[0]} is not held by this consumer of {self.destination}")
            self._held.difference_update(m.ack_id for m in messages)
        try:
            self._broker._ack(self, messages)
        except BrokerError:
            with self._held_lock:
                self._held.update(m.ack_id for m in messages)  # not sent: they may still be acked
            raise

    def close(self) -> None:
        self._broker._unsubscribe(self)

    def deliver(self, message: StompMessage) -> None:
        """Take a message from the connection's reader thread: to the listener, or into the inbox."""
        if self._listener is None:
            self._inbox.put(message)
            return
        with self._held_lock:
            self._held.add(message.ack_id)
        try:
            self._listener(message)
        except Exception:  # the reader thread must survive a listener's bug; the message is redelivered later
            logger.exception("the listener of %s failed on message %s", self.destination, message.broker_message_id)

    def discard_inbox(self) -> None:
        """Forget what the last connection delivered: its ack ids are void and the broker redelivers it."""
        with self._held_lock:
            self._held.clear()
        while True:
            try:
                self._inbox.get_nowait()
            except queue.Empty:
                return


class StompBroker(Broker):
    """One STOMP 1.2 connection with publisher confirms, per-consumer prefetch and reconnection."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 10.0,
        receipt_timeout: float = 10.0,
        heartbeat_ms: int = 10_000,
    ) -> None:
        parsed = parse_stomp_url(url)
        self.url = url
        self.brokers = parsed.brokers
        self._broker_index = 0  # the broker of the failover list last connected to (or tried first)
        self._use_ssl = parsed.scheme == "stomp+ssl"
        self.server = ""  # the CONNECTED frame's `server` header, e.g. "ActiveMQ-Artemis/2.40.0 …"
        self._login = parsed.login
        self._passcode = parsed.passcode
        self._connect_timeout = connect_timeout
        self._receipt_timeout = receipt_timeout
        self._heartbeat_ms = heartbeat_ms

        self._state = threading.Condition()  # guards the fields below; never held while writing frames
        self._conn: stomp.Connection12 | None = None
        self._listener: _Listener | None = None
        self._generation = 0
        self._up = False
        self._closed = False
        self._consumers: dict[str, StompConsumer] = {}
        self._generations = itertools.count(1)
        self._subscription_ids = itertools.count(1)

        self._receipts_lock = threading.Lock()
        self._receipts: dict[str, tuple[_Batch, int, int]] = {}  # receipt id -> (batch, index, generation)
        self._receipt_prefix = uuid.uuid4().hex[:12]
        self._receipt_ids = itertools.count(1)

        self._lost = threading.Event()  # wakes the reconnector
        self._closing = threading.Event()  # interrupts its backoff sleeps
        self._management = Management(self.host, self.port, self._login, self._passcode, use_ssl=self._use_ssl,
                                      timeout=connect_timeout)
        self._connect()
        threading.Thread(target=self._reconnect_forever, name=f"stomp-reconnect-{self.address}", daemon=True).start()

    @property
    def host(self) -> str:
        return self.brokers[self._broker_index][0]

    @property
    def port(self) -> int:
        return self.brokers[self._broker_index][1]

    @property
    def address(self) -> str:
        """The broker connected to (or to be tried first), as host:port."""
        return f"{self.host}:{self.port}"

    # -- connection management ---------------------------------------------------------

    def _open(self, generation: int, host: str, port: int) -> tuple[stomp.Connection12, _Listener]:
        """Open a connection to one broker and wait for CONNECTED; raise BrokerUnavailable if none comes in time."""
        address = f"{host}:{port}"
        conn = stomp.Connection12(
            [(host, port)],
            heartbeats=(self._heartbeat_ms, self._heartbeat_ms),
            timeout=self._connect_timeout,  # bounds the TCP connect only; stomp.py clears it afterwards
            reconnect_attempts_max=1,  # this class reconnects, with its own backoff
            try_loopback_connect=False,
            auto_decode=False,
        )
        if self._use_ssl:
            conn.set_ssl(for_hosts=[(host, port)])
        listener = _Listener(self, generation)
        conn.set_listener("dovecote", listener)
        try:
            # Not wait=True: stomp.py would wait for CONNECTED forever; we wait with a timeout.
            conn.connect(self._login, self._passcode, wait=False)
        except (StompException, OSError) as error:
            self._drop(conn)
            raise BrokerUnavailable(f"cannot connect to the STOMP broker at {address}: {error!r}") from error
        if listener.settled.wait(self._connect_timeout) and listener.connected and not listener.gone.is_set():
            _disable_nagle(conn)
            return conn, listener
        self._drop(conn)
        reason = listener.error or ("connection closed" if listener.gone.is_set() else "no CONNECTED frame")
        raise BrokerUnavailable(
            f"cannot connect to the STOMP broker at {address} within {self._connect_timeout:g} s: {reason}"
        )

    def _open_any(self, generation: int) -> tuple[stomp.Connection12, _Listener]:
        """Connect to the first broker of the failover list that answers, from the one last used."""
        failures = []
        for offset in range(len(self.brokers)):
            index = (self._broker_index + offset) % len(self.brokers)
            try:
                opened = self._open(generation, *self.brokers[index])
            except BrokerUnavailable as error:
                failures.append(str(error))
                continue
            if index != self._broker_index:
                logger.warning("failed over to the STOMP broker at %s:%s", *self.brokers[index])
                self._broker_index = index
                self._management.point_at(*self.brokers[index])
            return opened
        raise BrokerUnavailable("; ".join(failures))

    def _connect(self) -> None:
        """Open a new connection, make it current and subscribe the live consumers on it."""
        generation = next(self._generations)
        conn, listener = self._open_any(generation)
        with self._state:
            if self._closed:
                self._drop(conn)
                return
            self._conn, self._listener, self._generation, self._up = conn, listener, generation, True
            consumers = list(self._consumers.values())
            self._state.notify_all()
        logger.info("connected to the STOMP broker at %s (connection %d)", self.address, generation)
        for consumer in consumers:
            consumer.discard_inbox()
            self._subscribe(conn, consumer)
        if listener.gone.is_set():  # it died before it became current, so its loss was ignored
            self._on_connection_lost(generation)

    def _on_connection_lost(self, generation: int) -> None:
        with self._state:
            if generation != self._generation or not self._up:
                return
            self._up = False
            self._state.notify_all()
        logger.warning("lost the connection to the STOMP broker at %s; reconnecting", self.address)
        self._fail_receipts(generation, f"connection to {self.address} lost before the receipt")
        self._lost.set()

    def _reconnect_forever(self) -> None:
        while True:
            self._lost.wait()
            self._lost.clear()
            if self._closing.is_set():
                return
            self._reconnect_with_backoff()

    def _reconnect_with_backoff(self) -> None:
        delay = RECONNECT_FIRST_DELAY
        while not self._closing.wait(delay):
            try:
                self._connect()
                return
            except BrokerUnavailable as error:
                logger.warning("%s; retrying in %.1f s", error, min(delay * 2, RECONNECT_MAX_DELAY))
            except Exception:  # this thread must outlive any surprise, or the broker stays down for good
                logger.exception("unexpected error reconnecting to the STOMP broker at %s", self.address)
            delay = min(delay * 2, RECONNECT_MAX_DELAY)

    def _drop(self, conn: stomp.Connection12) -> None:
        """Close a connection's socket without the DISCONNECT handshake."""
        try:
            conn.transport.disconnect_socket()
        except Exception:  # the socket may be half-open or gone; it is being thrown away
            logger.debug("error closing a STOMP socket", exc_info=True)

    def _current(self) -> tuple[stomp.Connection12 | None, int, bool]:
        with self._state:
            return self._conn, self._generation, self._up

    def _is_current(self, generation: int) -> bool:
        with self._state:
            return self._up and generation == self._generation

    def is_connected(self) -> bool:
        conn, _, up = self._current()
        return up and conn is not None and conn.is_connected()

    def close(self) -> None:
        with self._state:
            if self._closed:
                return
            self._closed, self._up = True, False
            conn, listener = self._conn, self._listener
            consumers = list(self._consumers.values())
            self._consumers.clear()
            self._state.notify_all()
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

    def _disconnect(self, conn: stomp.Connection12, listener: _Listener) -> None:
        """Send DISCONNECT and wait briefly for the broker to close, then close the socket ourselves."""
        try:
            conn.disconnect()  # stomp.py adds a receipt and closes the socket when it arrives
        except (StompException, OSError):
            logger.debug("DISCONNECT not sent to %s", self.address, exc_info=True)
        if not listener.gone.wait(DISCONNECT_GRACE):
            self._drop(conn)

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

    def _expect_receipts(self, count: int, generation: int) -> tuple[_Batch, list[str]]:
        """Register `count` receipt ids before their frames are written, so none can be missed."""
        batch = _Batch(count)
        receipts = [f"{self._receipt_prefix}-{next(self._receipt_ids)}" for _ in range(count)]
        with self._receipts_lock:
            for index, receipt in enumerate(receipts):
                self._receipts[receipt] = (batch, index, generation)
        return batch, receipts

    def _forget_receipts(self, receipts: list[str]) -> None:
        with self._receipts_lock:
            for receipt in receipts:
                self._receipts.pop(receipt, None)

    def _write_sends(
        self, conn: stomp.Connection12, messages: Sequence[OutgoingMessage], receipts: list[str], batch: _Batch
    ) -> int:
        """Write every SEND frame before waiting for any receipt (pipelining); return how many were written.

        The frames go in one socket write per WRITE_CHUNK frames: a write per frame releases and
        retakes the GIL each time, which a busy process pays for in latency.
        """
        sent = 0
        for start in range(0, len(messages), WRITE_CHUNK):
            chunk = zip(messages[start:start + WRITE_CHUNK], receipts[start:start + WRITE_CHUNK], strict=True)
            payload = b"".join(encode_frame(conn, "SEND", {**send_headers(message, receipt),
                                                           "destination": message.destination}, message.body)
                               for message, receipt in chunk)
            try:
                conn.transport.send(payload)
            except (StompException, OSError) as error:
                for unsent in range(sent, len(messages)):
                    batch.fail(unsent, f"could not write to {self.address}: {error!r}")
                return sent
            sent = min(len(messages), start + WRITE_CHUNK)
        return sent

    def _wait_until_up(self, deadline: float) -> tuple[stomp.Connection12, int]:
        """Return the live connection, waiting until `deadline` for a reconnection."""
        while True:
            with self._state:
                self._state.wait_for(lambda: self._up or self._closed, max(deadline - time.monotonic(), 0))
                if self._closed:
                    raise BrokerError(f"the connection to {self.address} is closed")
                if not self._up or self._conn is None:
                    raise SendFailed(f"not connected to the STOMP broker at {self.address} (reconnecting)")
                conn, generation = self._conn, self._generation
            if conn.is_connected():
                return conn, generation
            # stomp.py already knows the socket is gone; our listener has not been told yet.
            self._on_connection_lost(generation)

    def _on_receipt(self, receipt: str) -> None:
        with self._receipts_lock:
            entry = self._receipts.pop(receipt, None)
        if entry is not None:
            batch, index, _ = entry
            batch.confirm(index)

    def _on_error(self, frame: Frame) -> None:
        reason = frame.headers.get("message", "ERROR frame")
        logger.error("STOMP broker at %s sent ERROR: %s", self.address, reason)
        with self._receipts_lock:
            entry = self._receipts.pop(frame.headers.get("receipt-id", ""), None)
        if entry is not None:
            batch, index, _ = entry
            batch.fail(index, f"broker refused the send: {reason}")

    def _fail_receipts(self, generation: int | None, reason: str) -> None:
        """Fail the receipts awaited on `generation` (None: all of them); they can no longer arrive."""
        with self._receipts_lock:
            lost = [key for key, (_, _, gen) in self._receipts.items() if generation is None or gen == generation]
            entries = [self._receipts.pop(key) for key in lost]
        for batch, index, _ in entries:
            batch.fail(index, reason)

    # -- consuming -----------------------------------------------------------------------

    def consumer(self, destination: str, *, prefetch: int = 100, on_message: OnMessage | None = None) -> Consumer:
        if prefetch < 1:
            raise ValueError("prefetch must be at least 1")
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

    def _subscribe(self, conn: stomp.Connection12, consumer: StompConsumer) -> None:
        # Artemis sends while the consumer has window left and takes each frame's encoded size
        # off it until the ACK: a window of 1 byte is one message at a time.
        window = 1 if consumer.prefetch == 1 else consumer.prefetch * WINDOW_BYTES_PER_MESSAGE
        headers = {"consumer-window-size": str(window), "subscription-type": ANYCAST}
        try:
            conn.subscribe(
                consumer.destination,
                id=consumer.subscription_id,
                ack="client-individual",
                headers=headers,
            )
        except (StompException, OSError):
            # The connection is dying; the reconnector subscribes again on the next one.
            logger.warning("SUBSCRIBE to %s failed on a dying connection", consumer.destination, exc_info=True)

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

    def _ack(self, consumer: StompConsumer, messages: Sequence[ReceivedMessage]) -> None:
        """Send the ACK frames of `messages` in one socket write."""
        conn = None
        for message in messages:
            conn = self._check_ackable(consumer, message)
        if conn is None:
            return
        try:
            conn.transport.send(b"".join(encode_frame(conn, "ACK", {"id": message.ack_id}) for message in messages))
        except (StompException, OSError) as error:
            raise BrokerError(f"ACK not sent to {self.address}; the messages will be redelivered") from error


def encode_frame(conn: stomp.Connection12, command: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """Encode a frame as stomp.py would send it (STOMP 1.2 header escaping, content-length)."""
    if body:
        headers["content-length"] = str(len(body))
    conn._escape_headers(headers)
    return stomp.utils.pack(stomp.utils.convert_frame(Frame(command, headers, body)))


def send_headers(message: OutgoingMessage, receipt: str) -> dict[str, str]:
    """Return the SEND frame headers for `message` (stomp.py escapes them per STOMP 1.2)."""
    headers = {"content-type": "application/json", **message.headers}
    headers["persistent"] = "true"
    headers["destination-type"] = ANYCAST
    headers["receipt"] = receipt
    if message.delay_ms > 0:
        headers["AMQ_SCHEDULED_DELAY"] = str(int(message.delay_ms))
    if message.expires_at_ms is not None:
        headers["expires"] = str(int(message.expires_at_ms))
    return headers


def received_message(destination: str, frame: Frame, generation: int) -> StompMessage:
    """Build the message a consumer hands out from a MESSAGE frame.

    `destination` is the consumer's own (for a message moved to the expiry queue, the frame's
    `destination` header names the expiry address).
    """
    headers = {
        name: value
        for name, value in frame.headers.items()
        if name not in DELIVERY_HEADERS and not name.startswith("_")  # "_AMQ_*": Artemis internals
    }
    if headers.get("expires") == "0":  # Artemis writes expires:0 for "never"
        del headers["expires"]
    redelivered = frame.headers.get("redelivered") == "true"
    body = frame.body if isinstance(frame.body, bytes) else (frame.body or "").encode()
    return StompMessage(
        destination=destination,
        body=body,
        headers=headers,
        broker_message_id=frame.headers.get("message-id", ""),
        redelivered=redelivered,
        ack_id=frame.headers.get("ack", frame.headers.get("message-id", "")),
        generation=generation,
    )


def _disable_nagle(conn: stomp.Connection12) -> None:
    """Send each frame at once: with Nagle's algorithm a SEND waits ~40 ms for the previous ACK."""
    sock = getattr(conn.transport, "socket", None)
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            logger.debug("could not set TCP_NODELAY", exc_info=True)
