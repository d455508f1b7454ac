"""Everything that talks to the message broker goes through this package.

`connect(url)` opens a connection: `stomp://user:pass@host:port` (Apache Artemis) or
`memory://[name]` (the in-process broker of embedded mode and unit tests).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from delivery.broker.base import (
    EXPIRY_DESTINATION,
    Broker,
    BrokerError,
    BrokerUnavailable,
    Consumer,
    OnMessage,
    OutgoingMessage,
    QueueInUse,
    QueueStats,
    ReceivedMessage,
    SendFailed,
)
from delivery.broker.memory import MemoryBroker
from delivery.broker.stomp import CONSUMERS_PER_CONNECTION, StompBroker

__all__ = [
    "EXPIRY_DESTINATION",
    "Broker",
    "BrokerError",
    "BrokerUnavailable",
    "Consumer",
    "OnMessage",
    "OutgoingMessage",
    "QueueInUse",
    "QueueStats",
    "ReceivedMessage",
    "SendFailed",
    "connect",
]


def connect(
    url: str, *, connect_timeout: float = 10.0, receipt_timeout: float = 10.0, heartbeat_ms: int = 10_000,
    consumers_per_connection: int = CONSUMERS_PER_CONNECTION,
) -> Broker:
    """Open a broker connection for `url`; raise BrokerUnavailable if it cannot be made.

    A STOMP broker puts at most `consumers_per_connection` consumers on one connection and opens more for the rest.
    """
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return MemoryBroker(url)
    if scheme in ("stomp", "stomp+ssl"):
        return StompBroker(
            url, connect_timeout=connect_timeout, receipt_timeout=receipt_timeout, heartbeat_ms=heartbeat_ms,
            consumers_per_connection=consumers_per_connection,
        )
    raise ValueError(f"unsupported broker URL {url!r}: use stomp://user:pass@host:port or memory://")
