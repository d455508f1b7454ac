"""One STOMP 1.2 connection to Apache Artemis, replaced when it drops, on stomp.py.

`StompConnection` holds the connection and the consumers subscribed on it: a background thread
reconnects with exponential backoff and subscribes the live consumers again. Every frame read from
a connection is tagged with that connection's generation, so messages and acks that belong to a
dead connection are recognised and refused instead of misrouted. What arrives (receipts, errors,
messages) and what a lost connection voids (the receipts awaited on it) are the subclass's to handle
(`StompBroker`).

The URL may name several brokers, a failover list (`parse_stomp_url`): an Artemis primary and
its backup (deploy/artemis/: shared store, so the backup serves the primary's journal once it
holds the lock). Each (re)connection tries them in turn from the one last used, so a client
follows the pair to whichever broker is live.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

import stomp
from stomp.exception import StompException
from stomp.utils import Frame

from delivery.broker.base import BrokerError, BrokerUnavailable, SendFailed
from delivery.broker.stomp_consumer import StompConsumer
from delivery.broker.stomp_wire import ANYCAST

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


# A lost connection is tried again after 0.1 s, doubling to 1 s, then every second until a broker
# answers: a refused connection costs a SYN, and a backup that just went live (deploy/artemis/) is
# found within a second, so a retry that fell due during the takeover fires right after it.
RECONNECT_FIRST_DELAY = 0.1
RECONNECT_MAX_DELAY = 1.0
RECONNECT_WARN_EVERY = 30.0  # while down, a warning this often (each failed try is logged at DEBUG)
DISCONNECT_GRACE = 2.0
# Artemis counts a consumer's window in bytes of encoded MESSAGE frames; a Dovecote frame
# (push envelope and about 600 bytes of headers) is about 2 KB.
WINDOW_BYTES_PER_MESSAGE = 2048


class _Listener(stomp.ConnectionListener):
    """Pass one connection's frames to its broker, tagged with the connection's generation."""

    def __init__(self, broker: StompConnection, generation: int) -> None:
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
        self.broker._on_error(self.generation, frame)

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



class StompConnection(ABC):
    """One STOMP 1.2 connection to the first live broker of the URL's list, reopened when it drops."""

    def __init__(self, url: str, *, connect_timeout: float, heartbeat_ms: int) -> None:
        parsed = parse_stomp_url(url)
        self.url = url
        self.brokers = parsed.brokers
        self._broker_index = 0  # the broker of the failover list last connected to (or tried first)
        self._use_ssl = parsed.scheme == "stomp+ssl"
        self.server = ""  # the CONNECTED frame's `server` header, e.g. "ActiveMQ-Artemis/2.40.0 …"
        self._login = parsed.login
        self._passcode = parsed.passcode
        self._connect_timeout = connect_timeout
        self._heartbeat_ms = heartbeat_ms

        self._state = threading.Condition()  # guards the fields below; never held while writing frames
        self._conn: stomp.Connection12 | None = None
        self._listener: _Listener | None = None
        self._generation = 0
        self._up = False
        self._closed = False
        self._consumers: dict[str, StompConsumer] = {}
        self._generations = itertools.count(1)

        self._lost = threading.Event()  # wakes the reconnector
        self._closing = threading.Event()  # interrupts its backoff sleeps

    def _start(self) -> None:
        """Connect (raise BrokerUnavailable if no broker answers) and start the reconnector."""
        self._connect()
        threading.Thread(target=self._reconnect_forever, name=f"stomp-reconnect-{self.address}", daemon=True).start()

    @abstractmethod
    def _on_receipt(self, receipt: str) -> None:
        """Take the RECEIPT for `receipt`."""

    @abstractmethod
    def _on_error(self, generation: int, frame: Frame) -> None:
        """Take an ERROR frame read from connection `generation`."""

    @abstractmethod
    def _on_message(self, generation: int, frame: Frame) -> None:
        """Take a MESSAGE frame read from connection `generation`."""

    @abstractmethod
    def _fail_receipts(self, generation: int | None, reason: str) -> None:
        """Fail the receipts awaited on `generation` (None: all of them); they can no longer arrive."""

    @abstractmethod
    def _failed_over(self, host: str, port: int) -> None:
        """Follow the connection to another broker of the failover list."""

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
                self._failed_over(*self.brokers[index])
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
        lost_at = time.monotonic()
        warned_at = None
        while not self._closing.wait(delay):
            try:
                self._connect()
                return
            except BrokerUnavailable as error:
                now = time.monotonic()
                if warned_at is None or now - warned_at >= RECONNECT_WARN_EVERY:
                    warned_at = now
                    logger.warning("%s; down for %.0f s, trying every %.1f s", error, now - lost_at,
                                   RECONNECT_MAX_DELAY)
                else:
                    logger.debug("%s; retrying in %.1f s", error, min(delay * 2, RECONNECT_MAX_DELAY))
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

    def _disconnect(self, conn: stomp.Connection12, listener: _Listener) -> None:
        """Send DISCONNECT and wait briefly for the broker to close, then close the socket ourselves."""
        try:
            conn.disconnect()  # stomp.py adds a receipt and closes the socket when it arrives
        except (StompException, OSError):
            logger.debug("DISCONNECT not sent to %s", self.address, exc_info=True)
        if not listener.gone.wait(DISCONNECT_GRACE):
            self._drop(conn)

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



def _disable_nagle(conn: stomp.Connection12) -> None:
    """Send each frame at once: with Nagle's algorithm a SEND waits ~40 ms for the previous ACK."""
    sock = getattr(conn.transport, "socket", None)
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            logger.debug("could not set TCP_NODELAY", exc_info=True)
