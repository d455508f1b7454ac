"""A STOMP consumer: one SUBSCRIBE whose MESSAGE frames wait in an inbox or go to a listener.

It remembers which ack ids it handed out on the current connection, so each message is acked at
most once (Artemis closes the connection on an ACK for a message it does not hold there); the
connection itself (`StompBroker`) writes the ACK frames and says which connection is current.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from typing import Protocol

from delivery.broker.base import BrokerError, Consumer, OnMessage, ReceivedMessage
from delivery.broker.stomp_wire import StompMessage

logger = logging.getLogger("delivery.broker")


class ConsumerHost(Protocol):
    """What a consumer asks of the connection that subscribed it."""

    def _is_current(self, generation: int) -> bool: ...

    def ack_together(self, groups: Sequence[tuple[Consumer, Sequence[ReceivedMessage]]]) -> None: ...

    def _unsubscribe(self, consumer: StompConsumer) -> None: ...


class StompConsumer(Consumer):
    """One SUBSCRIBE with client-individual acks; MESSAGE frames for it land in its inbox."""

    def __init__(self, broker: ConsumerHost, destination: str, prefetch: int, subscription_id: str,
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
        self._broker.ack_together([(self, messages)])

    def _take_held(self, messages: Sequence[ReceivedMessage]) -> None:
        """Mark these messages acked (the connection is about to write their ACKs); BrokerError if one is not held."""
        with self._held_lock:
            if unknown := [m.ack_id for m in messages if m.ack_id not in self._held]:
                raise BrokerError(f"message {unknown[0]} is not held by this consumer of {self.destination}")
            self._held.difference_update(m.ack_id for m in messages)

    def _give_back(self, messages: Sequence[ReceivedMessage]) -> None:
        """Their ACKs were not written: they may still be acked."""
        with self._held_lock:
            self._held.update(m.ack_id for m in messages)

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
