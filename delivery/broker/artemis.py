"""Apache Artemis's management API, called over STOMP.

Artemis answers management requests sent to the address `activemq.management`: the headers
name the resource (`broker`, `queue.<name>`) and the operation or attribute, the body is a
JSON array of parameters, and the reply goes to the queue named in `reply-to`, with
`_AMQ_OperationSucceeded` saying whether it worked and a JSON array holding the result.

Artemis reads the parameters only from a *text* message, which over STOMP is a SEND without a
`content-length` header; stomp.py adds one unless told not to, so management has a connection
of its own. The broker's user needs the `manage` permission (deploy/artemis/broker.xml).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from dataclasses import dataclass, replace
from typing import Any

import stomp
from stomp.exception import StompException
from stomp.utils import Frame

from delivery.broker.base import BrokerError, BrokerUnavailable, QueueInUse, QueueStats

logger = logging.getLogger("delivery.broker")

MANAGEMENT_ADDRESS = "activemq.management"
REPLY_PREFIX = "dovecote.management."
PAGE_SIZE = 500
LIST_TRIES = 3
VANISHED_QUEUE = '"q" is null'  # Artemis's NullPointerException when a queue goes while it lists them
# Artemis names its own queues with these; they are not Dovecote's.
INTERNAL_PREFIXES = ("$sys.", "activemq.", REPLY_PREFIX)


class ManagementError(BrokerError):
    """Artemis refused or failed a management operation; the message is the broker's."""


@dataclass(frozen=True)
class _Endpoint:
    host: str
    port: int
    login: str | None
    passcode: str | None
    use_ssl: bool


class _Replies(stomp.ConnectionListener):
    def __init__(self) -> None:
        self.arrived = threading.Condition()
        self.frames: list[Frame] = []
        self.connected = threading.Event()
        self.gone = threading.Event()
        self.error = ""

    def on_connected(self, frame: Frame) -> None:
        self.connected.set()

    def on_error(self, frame: Frame) -> None:
        self.error = frame.headers.get("message", "ERROR frame")
        self.connected.set()

    def on_message(self, frame: Frame) -> None:
        with self.arrived:
            self.frames.append(frame)
            self.arrived.notify_all()

    def on_disconnected(self) -> None:
        self.gone.set()
        self.connected.set()
        with self.arrived:
            self.arrived.notify_all()


class Management:
    """Management calls on one Artemis broker, one at a time, over a connection opened on first use."""

    def __init__(self, host: str, port: int, login: str | None, passcode: str | None, *,
                 use_ssl: bool = False, timeout: float = 5.0) -> None:
        self._endpoint = _Endpoint(host, port, login, passcode, use_ssl)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: stomp.Connection12 | None = None
        self._replies: _Replies | None = None
        self._reply_queue = f"{REPLY_PREFIX}{uuid.uuid4().hex}"

    def point_at(self, host: str, port: int) -> None:
        """Send the next calls to another broker (the live one of a failover pair), on a new connection."""
        with self._lock:
            if (host, port) != (self._endpoint.host, self._endpoint.port):
                self._drop()
                self._endpoint = replace(self._endpoint, host=host, port=port)

    def call(self, resource: str, operation: str, *params: Any) -> Any:
        """Invoke `operation` on `resource` (e.g. "broker", "queue.subscription-7") and return its result."""
        return self._request({"_AMQ_ResourceName": resource, "_AMQ_OperationName": operation}, list(params))

    def attribute(self, resource: str, name: str) -> Any:
        """Read attribute `name` (e.g. "MessageCount") of `resource`."""
        return self._request({"_AMQ_ResourceName": resource, "_AMQ_Attribute": name}, [])

    def destroy_queue(self, queue: str) -> bool:
        """Remove a queue without consumers and every message on it; False if there was no such queue."""
        try:
            self.call("broker", "destroyQueue", queue, False, True)
        except ManagementError as error:
            if "AMQ229017" in str(error):  # "Queue … does not exist"
                return False
            if "AMQ229025" in str(error):  # "Cannot delete queue … it has consumers"
                raise QueueInUse(f"queue {queue} still has consumers") from None
            raise
        return True

    def queues(self, name_contains: str = "") -> list[QueueStats]:
        """List the broker's queues (Artemis's own left out) with their message counts.

        Artemis 2.40 fails a listing that meets a queue being removed (a NullPointerException on the
        vanished queue: `… because "q" is null`); the listing is asked again, up to three times.
        """
        for attempt in range(1, LIST_TRIES + 1):
            try:
                return self._list_queues(name_contains)
            except ManagementError as error:
                if attempt == LIST_TRIES or VANISHED_QUEUE not in str(error):
                    raise
                logger.debug("a queue vanished while Artemis listed them; asking again")
        raise AssertionError("unreachable")

    def _list_queues(self, name_contains: str) -> list[QueueStats]:
        found: list[QueueStats] = []
        query = json.dumps({"field": "name", "operation": "CONTAINS", "value": name_contains} if name_contains
                           else {"field": "", "operation": "", "value": ""})
        page = 1
        while True:
            reply = json.loads(self.call("broker", "listQueues", query, page, PAGE_SIZE))
            rows = reply.get("data", [])
            found.extend(QueueStats(
                destination=_destination(row["address"], row["name"]),
                messages=int(row["messageCount"]), scheduled=int(row["scheduledCount"]),
                delivering=int(row["deliveringCount"]), consumers=int(row["consumerCount"]),
            ) for row in rows if not row["name"].startswith(INTERNAL_PREFIXES))
            if page * PAGE_SIZE >= int(reply.get("count", 0)) or not rows:
                return found
            page += 1

    def close(self) -> None:
        with self._lock:
            self._drop()

    # -- the request-reply exchange ----------------------------------------------------------

    def _request(self, headers: dict[str, str], params: list[Any]) -> Any:
        with self._lock:
            for attempt in (1, 2):  # once more on a fresh connection if the old one had died
                conn, replies = self._connection()
                with replies.arrived:
                    replies.frames.clear()
                try:
                    conn.send(MANAGEMENT_ADDRESS, json.dumps(params),
                              headers={**headers, "reply-to": self._reply_queue})
                except (StompException, OSError) as error:
                    self._drop()
                    if attempt == 2:
                        raise BrokerError(f"management request to {self._address} not sent: {error!r}") from error
                    continue
                frame = self._wait_for_reply(replies)
                if frame is not None:
                    return _result(frame)
                self._drop()
            raise BrokerError(f"no management reply from {self._address} within {self._timeout:g} s")

    def _wait_for_reply(self, replies: _Replies) -> Frame | None:
        with replies.arrived:
            replies.arrived.wait_for(lambda: replies.frames or replies.gone.is_set(), self._timeout)
            return replies.frames.pop(0) if replies.frames else None

    def _connection(self) -> tuple[stomp.Connection12, _Replies]:
        if self._conn is not None and self._replies is not None and self._conn.is_connected():
            return self._conn, self._replies
        self._drop()
        endpoint = self._endpoint
        conn = stomp.Connection12([(endpoint.host, endpoint.port)], heartbeats=(0, 0), timeout=self._timeout,
                                  reconnect_attempts_max=1, auto_content_length=False, auto_decode=False)
        if endpoint.use_ssl:
            conn.set_ssl(for_hosts=[(endpoint.host, endpoint.port)])
        replies = _Replies()
        conn.set_listener("management", replies)
        try:
            conn.connect(endpoint.login, endpoint.passcode, wait=False)
        except (StompException, OSError) as error:
            raise BrokerUnavailable(f"cannot reach the STOMP broker at {self._address}: {error!r}") from error
        if not replies.connected.wait(self._timeout) or replies.error or replies.gone.is_set():
            conn.disconnect()
            raise BrokerUnavailable(f"the STOMP broker at {self._address} refused the management connection: "
                                    f"{replies.error or 'no CONNECTED frame'}")
        conn.subscribe(self._reply_queue, id="replies", ack="auto", headers={"subscription-type": "ANYCAST"})
        self._conn, self._replies = conn, replies
        return conn, replies

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.disconnect()
            except (StompException, OSError):
                logger.debug("management connection already gone", exc_info=True)
        self._conn = self._replies = None

    @property
    def _address(self) -> str:
        return f"{self._endpoint.host}:{self._endpoint.port}"


def _result(frame: Frame) -> Any:
    body = frame.body.decode() if isinstance(frame.body, bytes) else (frame.body or "")
    values = json.loads(body) if body else [None]
    value = values[0] if isinstance(values, list) and values else values
    if frame.headers.get("_AMQ_OperationSucceeded") != "true":
        raise ManagementError(f"Artemis management: {value}")
    return value


def _destination(address: str, queue: str) -> str:
    """Return the fully qualified name Dovecote uses for a queue (just the name when it is its address's)."""
    return queue if address == queue else f"{address}::{queue}"
