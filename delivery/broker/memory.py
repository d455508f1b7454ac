"""An in-process broker with the STOMP broker's semantics, for embedded mode and unit tests.

`memory://name` names a hub: every `MemoryBroker` opened on the same name in one process
shares its queues, so several "connections" see the same messages. A hub keeps messages in
per-destination heaps ordered by (available_at, sequence) and hands them to consumers
round-robin, within each consumer's prefetch limit, whenever a consumer asks for one.
A message found expired is moved to EXPIRY_DESTINATION, as Artemis's expiry reaper does;
reading that destination first reaps every queue. Listening consumers (`on_message`) are fed
by one thread per hub, woken by every change and by the next delayed message's due time.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from delivery.broker.base import (
    EXPIRY_DESTINATION,
    Broker,
    BrokerError,
    Consumer,
    OnMessage,
    OutgoingMessage,
    QueueInUse,
    QueueStats,
    ReceivedMessage,
)

_hubs: dict[str, _Hub] = {}
_hubs_lock = threading.Lock()


def hub_name(url: str) -> str:
    """Return the hub name of a `memory://[name]` URL."""
    parts = urlsplit(url)
    return parts.netloc or parts.path.strip("/")


def get_hub(name: str) -> _Hub:
    """Return the hub called `name`, creating it on first use."""
    with _hubs_lock:
        return _hubs.setdefault(name, _Hub())


def reset_hub(name: str = "") -> None:
    """Forget hub `name` and its messages: brokers opened afterwards start from an empty hub."""
    with _hubs_lock:
        _hubs.pop(name, None)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Stored:
    """A message held by a hub, waiting in a queue or handed to a consumer."""

    sequence: int
    body: bytes
    headers: dict[str, str]
    available_at: float  # time.monotonic() before which it stays invisible
    expires_at_ms: int | None
    redelivered: bool = False

    def is_expired(self, at_ms: int) -> bool:
        return self.expires_at_ms is not None and self.expires_at_ms <= at_ms

    def sort_key(self) -> tuple[float, int]:
        return (self.available_at, self.sequence)


@dataclass
class _Queue:
    """The messages of one destination and the consumers taking turns on them."""

    ready: list[tuple[float, int, _Stored]] = field(default_factory=list)
    consumers: list[MemoryConsumer] = field(default_factory=list)
    turn: int = 0

    def push(self, stored: _Stored) -> None:
        heapq.heappush(self.ready, (*stored.sort_key(), stored))

    def next_consumer_with_room(self) -> MemoryConsumer | None:
        """Return the next consumer in round-robin order that is below its prefetch limit."""
        count = len(self.consumers)
        for step in range(count):
            consumer = self.consumers[(self.turn + step) % count]
            if consumer.has_room():
                self.turn = (self.turn + step + 1) % count
                return consumer
        return None


class _Hub:
    """The shared state of every MemoryBroker on one name, guarded by one Condition."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.queues: dict[str, _Queue] = {}
        self.sequence = itertools.count(1)
        self.consumer_ids = itertools.count(1)
        self._feeder: threading.Thread | None = None

    def start_feeding(self) -> None:
        """Start the thread that hands messages to listening consumers (once per hub; call with the lock held)."""
        if self._feeder is None:
            self._feeder = threading.Thread(target=self._feed_forever, name="memory-broker-feeder", daemon=True)
            self._feeder.start()

    def _feed_forever(self) -> None:
        while True:
            with self.changed:
                handouts, wait = self._take_for_listeners()
                if not handouts:
                    self.changed.wait(wait)
                    continue
            for consumer, message in handouts:  # outside the lock: a listener may ack at once
                consumer.listener(message)  # type: ignore[misc]

    def _take_for_listeners(self) -> tuple[list[tuple[MemoryConsumer, ReceivedMessage]], float]:
        """Hand out what listening consumers have room for; also say how long until the next delayed message."""
        handouts, wait = [], 1.0
        for destination, queue in list(self.queues.items()):
            listeners = [consumer for consumer in queue.consumers if consumer.listener is not None]
            if not listeners:
                continue
            self.dispatch(destination)
            for consumer in listeners:
                while (stored := consumer.next_live()) is not None:
                    handouts.append((consumer, consumer.hand_out(stored)))
            if (due := self.seconds_until_due(destination)) is not None:
                wait = min(wait, max(due, 0.001))
        return handouts, wait

    def queue(self, destination: str) -> _Queue:
        return self.queues.setdefault(destination, _Queue())

    def store(self, message: OutgoingMessage) -> None:
        headers = {"content-type": "application/json", **message.headers}
        if message.expires_at_ms is not None:
            headers["expires"] = str(message.expires_at_ms)
        stored = _Stored(
            sequence=next(self.sequence),
            body=bytes(message.body),
            headers=headers,
            available_at=message.made_at + max(message.delay_ms, 0) / 1000,
            expires_at_ms=message.expires_at_ms,
        )
        self.queue(message.destination).push(stored)

    def dispatch(self, destination: str) -> None:
        """Hand every visible message of `destination` to consumers with room; move expired ones away."""
        if destination == EXPIRY_DESTINATION:
            self.reap_expired()
        queue, now, at_ms = self.queue(destination), time.monotonic(), now_ms()
        while queue.ready:
            available_at, _, stored = queue.ready[0]
            if stored.is_expired(at_ms):
                heapq.heappop(queue.ready)
                self.move_expired(stored)
                continue
            if available_at > now:
                return
            consumer = queue.next_consumer_with_room()
            if consumer is None:
                return
            heapq.heappop(queue.ready)
            consumer.buffer.append(stored)

    def move_expired(self, stored: _Stored) -> None:
        """Put an expired message on the expiry queue, as it was sent but with no expiry of its own."""
        stored.expires_at_ms = None
        stored.available_at = 0.0
        stored.headers.pop("expires", None)
        self.queue(EXPIRY_DESTINATION).push(stored)

    def reap_expired(self) -> None:
        """Move every expired message still waiting on a queue to the expiry queue."""
        at_ms = now_ms()
        for destination, queue in list(self.queues.items()):
            if destination == EXPIRY_DESTINATION:
                continue
            expired = [entry for entry in queue.ready if entry[2].is_expired(at_ms)]
            if expired:
                queue.ready = [entry for entry in queue.ready if not entry[2].is_expired(at_ms)]
                heapq.heapify(queue.ready)
                for _, _, stored in expired:
                    self.move_expired(stored)

    def seconds_until_due(self, destination: str) -> float | None:
        """Return how long until the first waiting message of `destination` becomes visible."""
        ready = self.queue(destination).ready
        return max(ready[0][0] - time.monotonic(), 0.0) if ready else None


class MemoryConsumer(Consumer):
    """A consumer of one hub queue with client-individual acks and a prefetch limit."""

    def __init__(self, hub: _Hub, destination: str, prefetch: int, consumer_id: int,
                 listener: OnMessage | None = None) -> None:
        self.destination = destination
        self.prefetch = prefetch
        self.listener = listener
        self.closed = False
        self.buffer: deque[_Stored] = deque()  # dispatched to it, not yet received
        self._hub = hub
        self._unacked: dict[str, _Stored] = {}
        self._ack_ids = (f"{consumer_id}-{n}" for n in itertools.count(1))

    def has_room(self) -> bool:
        return not self.closed and len(self.buffer) + len(self._unacked) < self.prefetch

    def receive(self, timeout: float) -> ReceivedMessage | None:
        if self.listener is not None:
            raise BrokerError(f"the consumer of {self.destination} hands its messages to a listener")
        deadline = time.monotonic() + timeout
        with self._hub.changed:
            while True:
                self._check_open()
                self._hub.dispatch(self.destination)
                stored = self.next_live()
                if stored is not None:
                    return self.hand_out(stored)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                due = self._hub.seconds_until_due(self.destination)
                self._hub.changed.wait(remaining if due is None else min(remaining, max(due, 0.001)))

    def next_live(self) -> _Stored | None:
        """Pop the next buffered message that has not expired while it waited in the buffer."""
        at_ms = now_ms()
        while self.buffer:
            stored = self.buffer.popleft()
            if not stored.is_expired(at_ms):
                return stored
            self._hub.move_expired(stored)
        return None

    def hand_out(self, stored: _Stored) -> ReceivedMessage:
        ack_id = next(self._ack_ids)
        self._unacked[ack_id] = stored
        return ReceivedMessage(
            destination=self.destination,
            body=stored.body,
            headers=dict(stored.headers),
            broker_message_id=f"memory-{stored.sequence}",
            redelivered=stored.redelivered,
            ack_id=ack_id,
        )

    def ack(self, message: ReceivedMessage) -> None:
        with self._hub.changed:
            self._take_unacked(message)
            self._hub.changed.notify_all()  # room for the next message

    def _take_unacked(self, message: ReceivedMessage) -> _Stored:
        self._check_open()
        stored = self._unacked.pop(message.ack_id, None)
        if stored is None:
            raise BrokerError(f"message {message.ack_id} is not held by this consumer of {self.destination}")
        return stored

    def _check_open(self) -> None:
        if self.closed:
            raise BrokerError(f"consumer of {self.destination} is closed; its messages will be redelivered")

    def close(self) -> None:
        """Stop consuming; received-but-unacked messages return marked redelivered, buffered ones as they were."""
        with self._hub.changed:
            if self.closed:
                return
            self.closed = True
            queue = self._hub.queue(self.destination)
            queue.consumers.remove(self)
            for stored in self._unacked.values():
                stored.redelivered = True
                queue.push(stored)
            for stored in self.buffer:
                queue.push(stored)
            self._unacked.clear()
            self.buffer.clear()
            self._hub.changed.notify_all()


class MemoryBroker(Broker):
    """One "connection" to an in-process hub; sends are stored (and so confirmed) at once."""

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._hub = get_hub(hub_name(url))
        self._consumers: list[MemoryConsumer] = []
        self._closed = False

    def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        with self._hub.changed:
            self._check_open()
            for message in messages:
                self._hub.store(message)
            self._hub.changed.notify_all()

    def consumer(self, destination: str, *, prefetch: int = 100, on_message: OnMessage | None = None) -> Consumer:
        if prefetch < 1:
            raise ValueError("prefetch must be at least 1")
        with self._hub.changed:
            self._check_open()
            consumer = MemoryConsumer(self._hub, destination, prefetch, next(self._hub.consumer_ids), on_message)
            self._hub.queue(destination).consumers.append(consumer)
            self._consumers.append(consumer)
            if on_message is not None:
                self._hub.start_feeding()
                self._hub.changed.notify_all()
            return consumer

    def delete_queue(self, destination: str) -> bool:
        with self._hub.changed:
            queue = self._hub.queues.get(destination)
            if queue is None:
                return False
            if queue.consumers:
                raise QueueInUse(f"queue {destination} still has consumers")
            del self._hub.queues[destination]
            return True

    def queues(self, name_contains: str = "") -> list[QueueStats]:
        with self._hub.changed:
            now = time.monotonic()
            found = []
            for destination, queue in self._hub.queues.items():
                if name_contains not in destination:
                    continue
                buffered = sum(len(c.buffer) for c in queue.consumers)
                delivering = sum(len(c._unacked) for c in queue.consumers)
                scheduled = sum(1 for available_at, _, _ in queue.ready if available_at > now)
                found.append(QueueStats(destination, messages=len(queue.ready) + buffered + delivering,
                                        scheduled=scheduled, delivering=delivering, consumers=len(queue.consumers)))
            return found

    def is_connected(self) -> bool:
        return not self._closed

    def close(self) -> None:
        with self._hub.changed:
            self._closed = True
            consumers, self._consumers = self._consumers, []
        for consumer in consumers:
            consumer.close()

    def _check_open(self) -> None:
        if self._closed:
            raise BrokerError(f"broker connection {self.url} is closed")
