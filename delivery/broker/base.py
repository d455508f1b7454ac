"""The broker interface every implementation (Apache Artemis over STOMP, in-memory) provides.

A `Broker` is one client connection. Sends are persistent and confirmed: `send_many`
returns only when the broker has confirmed every frame (publisher confirms: a RECEIPT
covering it), pipelining all frames before waiting. A `Consumer` receives from one
destination with client-individual acknowledgement and a prefetch limit; whatever it
received but did not ack goes back to the queue when it (or its connection) closes.
There is no negative acknowledgement: Artemis treats a STOMP NACK as an ACK, so a message
is given back by sending a confirmed copy and acking the original.

A message whose expiry passes before it is consumed is moved to `EXPIRY_DESTINATION`, where
Dovecote reads it to record the expiry (Artemis: the `expiry-address` of
deploy/artemis/broker.xml).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType

EXPIRY_DESTINATION = "dovecote.expired"


class BrokerError(Exception):
    """The broker could not do what was asked (connection lost, no receipt, refused frame)."""


class BrokerUnavailable(BrokerError):
    """No connection to the broker could be made."""


class QueueInUse(BrokerError):
    """A queue cannot be deleted while consumers are attached to it; try again once they are gone."""


class SendFailed(BrokerError):
    """Some sends of a batch were not confirmed; `confirmed` holds the indices that were."""

    def __init__(self, message: str, confirmed: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.confirmed = tuple(confirmed)


@dataclass(frozen=True)
class OutgoingMessage:
    """A message to send: body, application headers, scheduled delay and absolute expiry.

    The delay counts from when the message is made, not from when its frame is written: a send
    that waits for a reconnection (a failover takes seconds) writes what is left of it
    (`delay_left_ms`), so a retry falls due when its policy said, however long the send waited.
    """

    destination: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_ms: int = 0
    expires_at_ms: int | None = None  # unix epoch milliseconds; None: never expires
    made_at: float = field(default_factory=time.monotonic, compare=False, repr=False)  # time.monotonic()

    def delay_left_ms(self) -> int:
        """The delay still to run, now: `delay_ms` less the time since the message was made, at least 0."""
        if self.delay_ms <= 0:
            return 0
        return max(0, self.delay_ms - int((time.monotonic() - self.made_at) * 1000))


@dataclass(frozen=True)
class ReceivedMessage:
    """A message handed to a consumer; settle it with `Consumer.ack` or `Consumer.nack`."""

    destination: str
    body: bytes
    headers: Mapping[str, str]
    broker_message_id: str
    redelivered: bool
    ack_id: str


@dataclass(frozen=True)
class QueueStats:
    """What a broker holds on one queue right now."""

    destination: str
    messages: int  # every message on the queue: ready, scheduled and delivered but unacked
    scheduled: int  # waiting for their scheduled delivery time
    delivering: int  # handed to a consumer and not yet acked
    consumers: int


# Called with each message a listening consumer gets, on the broker's own thread: it must not block.
OnMessage = Callable[[ReceivedMessage], None]


class Consumer(ABC):
    """Receives from one destination; unacked messages return to the queue on close.

    A consumer either is read with `receive`, or hands each message to the `on_message` callback
    it was made with (a listening consumer, for event loops); `ack` and `close` work for both.
    """

    destination: str

    @abstractmethod
    def receive(self, timeout: float) -> ReceivedMessage | None:
        """Return the next message, or None if none arrived within `timeout` seconds."""

    @abstractmethod
    def ack(self, message: ReceivedMessage) -> None:
        """Settle `message`: the broker will not deliver it again."""

    def ack_many(self, messages: Sequence[ReceivedMessage]) -> None:
        """Settle several messages at once (an implementation may send them together)."""
        for message in messages:
            self.ack(message)

    @abstractmethod
    def close(self) -> None:
        """Stop receiving; messages received but not acked are redelivered later."""

    def __enter__(self) -> Consumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Broker(ABC):
    """One client connection to a broker."""

    url: str

    @abstractmethod
    def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        """Send every message persistently and return once all receipts are in.

        Raises SendFailed (with the confirmed indices) if any receipt is missing.
        """

    def send(self, message: OutgoingMessage) -> None:
        """Send one message and wait for its receipt."""
        self.send_many([message])

    def ack_together(self, groups: Sequence[tuple[Consumer, Sequence[ReceivedMessage]]]) -> None:
        """Settle the messages of several of this broker's consumers at once (an implementation may send them in
        one write). A group that cannot be settled is left as it was, and BrokerError is raised after the others."""
        refused: BrokerError | None = None
        for consumer, messages in groups:
            try:
                consumer.ack_many(messages)
            except BrokerError as error:
                refused = refused or error
        if refused is not None:
            raise refused

    @abstractmethod
    def consumer(self, destination: str, *, prefetch: int = 100, on_message: OnMessage | None = None) -> Consumer:
        """Subscribe to `destination` with client-individual acks and about `prefetch` messages unacked.

        With `on_message`, each message is handed to it as it arrives instead of waiting for `receive`.
        """

    @abstractmethod
    def delete_queue(self, destination: str) -> bool:
        """Remove the queue and every message on it, scheduled ones too; False if there was none.

        Raises QueueInUse while a consumer is attached (Artemis would cut that consumer's whole
        connection off); the caller tries again once its consumers have closed.
        """

    @abstractmethod
    def queues(self, name_contains: str = "") -> list[QueueStats]:
        """Return the broker's queues whose destination contains `name_contains`, with their counts."""

    @abstractmethod
    def is_connected(self) -> bool:
        """Say whether the connection is up now."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection; unacked messages of its consumers go back to their queues."""

    def __enter__(self) -> Broker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
