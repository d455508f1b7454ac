"""The push transport against hostile receivers and networks: DNS rebinding, proxies, drips, floods.

Each receiver here is a real socket server on loopback; DNS is replaced (socket.getaddrinfo)
where a test needs a name to answer differently over time.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.test import override_settings

from delivery.models import DeliveryAttempt
from delivery.transports import MAX_RETRY_AFTER_MS, PushRequest, post_once
from dovecote.error_text import ERROR_CHARS

Outcome = DeliveryAttempt.Outcome
DEADLINE_GRACE_MS = 250  # docs/security.md: an attempt ends within timeout_ms plus this


class RawServer:
    """A TCP server on loopback whose every connection is handled by `handle(conn)` in a thread."""

    def __init__(self, handle: Callable[[socket.socket], None]) -> None:
        self.handle = handle
        self.connections = 0
        self.sent = 0
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            read_request(conn)
            self.handle(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += conn.recv(65536)
    return data


@pytest.fixture
def servers() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    started: list[RawServer] = []

    def start(handle: Callable[[socket.socket], None]) -> RawServer:
        server = RawServer(handle)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def request(url: str, timeout_ms: int = 1000) -> PushRequest:
    return PushRequest(url=url, body=b'{"id": "m-1"}', message_id="m-1", correlation_id="c-1", attempt=1,
                       signing_secret="whsec_" + "A" * 44, timeout_ms=timeout_ms)


def answer(status: str, headers: str = "", body: bytes = b"") -> Callable[[socket.socket], None]:
    def handle(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{headers}\r\n".encode() + body)
    return handle


# ---- where it connects --------------------------------------------------------------------------

@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=[])
def test_a_name_rebinding_to_loopback_after_the_check_is_refused_and_never_reached(
    servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subscriptions.push_urls import check_push_url

    receiver = servers(answer("204 No Content"))
    answers = iter(["93.184.216.34"])  # the first lookup: a public address; every later one: loopback
    real_getaddrinfo = socket.getaddrinfo

    def rebinding(host: str, port: int, *args: object, **kwargs: object) -> list[tuple]:
        if host != "rebind.example":
            return real_getaddrinfo(host, port, *args, **kwargs)
        address = next(answers, "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    url = f"http://rebind.example:{receiver.port}/hook"
    check_push_url(url)  # as when the subscription was written: it resolved to a public address

    result = post_once(request(url))

    assert result.outcome == Outcome.FAILURE and not result.ok
    assert result.error.startswith("push URL refused: rebind.example resolves to 127.0.0.1, a loopback address")
    assert receiver.connections == 0


@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=[])
def test_an_address_literal_is_checked_before_connecting(servers) -> None:
    receiver = servers(answer("204 No Content"))

    result = post_once(request(f"http://127.0.0.1:{receiver.port}/hook"))

    assert result.error.startswith("push URL refused: 127.0.0.1 resolves to 127.0.0.1, a loopback address")
    assert receiver.connections == 0


def test_proxy_variables_are_ignored(servers, monkeypatch: pytest.MonkeyPatch) -> None:
    receiver = servers(answer("204 No Content"))
    proxy = servers(answer("200 OK"))
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    result = post_once(request(f"http://127.0.0.1:{receiver.port}/hook"))

    assert result.ok and result.status_code == 204
    assert (receiver.connections, proxy.connections) == (1, 0)


# ---- how long and how much ----------------------------------------------------------------------

def drip(head: bytes, every_s: float = 0.1) -> Callable[[socket.socket], None]:
    """Send `head` a byte at a time when it is slow, or at once, then one more byte every `every_s`, forever."""
    def handle(conn: socket.socket) -> None:
        if head.endswith(b"\r\n\r\n"):
            conn.sendall(head)
        else:
            for byte in head:
                conn.sendall(bytes([byte]))
                time.sleep(every_s)
        while True:
            time.sleep(every_s)
            conn.sendall(b"x")
    return handle


@pytest.mark.parametrize("head", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",  # a body that never ends
    b"HTTP/1.1 200 OK\r\nX-Slow: ",  # a head that never ends
    b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 100,  # a valid head, one byte at a time
], ids=["body", "headers", "status line"])
def test_a_receiver_that_drips_bytes_is_cut_off_at_the_deadline(servers, head: bytes) -> None:
    receiver = servers(drip(head))
    started = time.monotonic()

    result = post_once(request(f"http://127.0.0.1:{receiver.port}/hook", timeout_ms=1000))

    elapsed_ms = (time.monotonic() - started) * 1000
    if head.endswith(b"\r\n\r\n"):
        # The head came complete: the answer is known and the rest of the body is never read.
        assert result.ok and elapsed_ms < 1000
    else:
        assert result.outcome == Outcome.TIMEOUT and result.error == "timed out after 1000 ms"
        assert 1000 <= result.duration_ms <= 1000 + DEADLINE_GRACE_MS
        assert elapsed_ms <= 1000 + DEADLINE_GRACE_MS


def test_an_endless_body_is_not_read_past_the_cap(servers) -> None:
    chunk = b"y" * 65536

    def flood(conn: socket.socket) -> None:
        receiver.send(conn, b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n")
        while not receiver.stopping:
            receiver.send(conn, b"%x\r\n%s\r\n" % (len(chunk), chunk))

    receiver = servers(flood)
    started = time.monotonic()

    result = post_once(request(f"http://127.0.0.1:{receiver.port}/hook", timeout_ms=5000))

    assert result.outcome == Outcome.FAILURE and result.status_code == 500, result
    assert time.monotonic() - started < 2  # not until the deadline: it stopped reading
    assert result.error.startswith("HTTP 500: yyyy") and len(result.error) <= ERROR_CHARS
    time.sleep(0.3)
    sent = receiver.sent
    time.sleep(0.3)
    assert receiver.sent == sent  # the connection was closed, not drained


@pytest.mark.parametrize(("value", "expected"), [
    ("7", 7000),
    ("9" * 20, MAX_RETRY_AFTER_MS),
    ("9" * 4400, MAX_RETRY_AFTER_MS),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0),
    ("soon", None),
])
def test_retry_after_is_read_within_bounds(servers, value: str, expected: int | None) -> None:
    receiver = servers(answer("429 Too Many Requests", f"Retry-After: {value}\r\n"))

    result = post_once(request(f"http://127.0.0.1:{receiver.port}/hook"))

    assert result.status_code == 429 and result.retry_after_ms == expected


@pytest.mark.django_db(transaction=True)
def test_a_worker_records_a_dripping_receiver_as_a_timeout_at_its_deadline(
    client, servers, worker
) -> None:
    from rooms.models import ApiKey
    from tests.delivery.push.test_push_delivery import publish, wait_for_status
    from tests.factories import make_event_type, make_room, make_subscription

    receiver = servers(drip(b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 1000))
    room = make_room(delivery_attempts=0)
    make_event_type(room)
    subscription = make_subscription(room, push_url=f"http://127.0.0.1:{receiver.port}/hook", timeout_ms=1000)

    reply = publish(client, ApiKey.issue("shop", rooms=[room])[1], room.pk)

    delivery = wait_for_status(reply["message_id"], subscription.pk, "dead_lettered")
    [attempt] = delivery.attempt_log.all()
    assert attempt.outcome == Outcome.TIMEOUT and attempt.error == "timed out after 1000 ms"
    assert 1000 <= attempt.duration_ms <= 1000 + DEADLINE_GRACE_MS
