"""A small HTTP/1.1 client for push deliveries: keep-alive pools, checked addresses, bounded reads.

Push sessions POST thousands of webhooks a second from one event loop, and a general-purpose
client (aiohttp) spent more CPU per request than everything else a delivery costs together.
This one does only what a push needs: a POST with a known body, a response head, and at most
`body_limit` bytes of the response body, over connections kept per (scheme, host, port).
Responses are parsed by httptools (llhttp, the parser of Node.js), chunked bodies included.

Where it connects is decided by `resolve` (delivery/transports.py passes the push-URL checks):
a name is resolved once per `DNS_TTL_S`, and connections go to the addresses it returned, so
what was checked is what is reached. Deadlines are the caller's (`asyncio.timeout`); an
exception never leaves a connection in the pool. With `max_open`, the sockets open at once, idle
ones included, stay within it: before a new connection, the longest-idle ones are closed.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httptools

DNS_TTL_S = 10.0
IDLE_TIMEOUT_S = 15.0  # a pooled connection unused this long is closed instead of reused
MAX_IDLE_PER_ORIGIN = 256
MAX_HEAD_BYTES = 64 * 1024  # a response head larger than this is an error
MAX_HEADERS = 200

Resolve = Callable[[str, int], Awaitable[list[str]]]  # host, port -> addresses to connect to


class ResponseError(Exception):
    """The receiver's answer could not be read as HTTP/1.1."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # names in lower case; a repeated header keeps its last value
    body: bytes  # at most `body_limit` bytes
    complete: bool  # the whole body was read (else the connection is closed, not reused)


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> tuple[Origin, str]:
        """The origin of a URL and the request target (path and query)."""
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.scheme, parts.hostname or "", port), target

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


class _Connection(asyncio.Protocol):
    """One keep-alive connection: writes a request, parses the response into a future."""

    def __init__(self, body_limit: int) -> None:
        self.body_limit = body_limit
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = time.monotonic()
        self._reply: asyncio.Future[Response] | None = None
        self._reset()

    def _reset(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self._head_bytes = 0
        self._headers: dict[str, str] = {}
        self._header_count = 0
        self._head_done = False
        self._body: list[bytes] = []
        self._body_size = 0
        self._message_done = False

    # -- asyncio.Protocol -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._reply is None or self._reply.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted any more
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(ResponseError("the receiver switched protocols"))
            return
        except httptools.HttpParserError as error:
            self._fail(ResponseError(f"not an HTTP/1.1 response: {error}"))
            return
        if not self._head_done:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._fail(ResponseError(f"the response head is over {MAX_HEAD_BYTES} bytes"))
                return
        if self._head_done and (self._message_done or self._body_size):
            # The answer is known; a body that is still coming is not waited for (nor read past the limit).
            self._complete()

    def eof_received(self) -> bool | None:
        """The receiver closed its side: a body read to the close ends here; a head cut short is no answer."""
        if self._reply is not None and not self._reply.done():
            if self._head_done:
                # httptools has no way to tell its parser of the end of input (llhttp_finish): a body
                # delimited by the close (no Content-Length, not chunked) is complete now.
                self._message_done = self._message_done or self._framed_by_close()
                self._complete()
            elif self._head_bytes:
                self._fail(ResponseError("the receiver closed the connection in the middle of its response head"))
            else:
                self._fail(ConnectionResetError("the receiver closed the connection without answering"))
        self.closed = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._reply is not None and not self._reply.done():
            self._reply.set_exception(exc or ConnectionResetError("the connection was closed before the answer"))

    # -- httptools callbacks ----------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > MAX_HEADERS:
            raise httptools.HttpParserError(f"more than {MAX_HEADERS} headers")
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._head_done = True

    def on_body(self, body: bytes) -> None:
        room = self.body_limit - self._body_size
        if room > 0:
            self._body.append(body[:room])
        self._body_size += len(body)

    def on_message_complete(self) -> None:
        self._message_done = True

    # -- the exchange -----------------------------------------------------------------------------

    async def exchange(self, request: bytes) -> Response:
        assert self.transport is not None
        self._reset()
        self._reply = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        try:
            return await self._reply
        except BaseException:
            self.close()
            raise

    def _complete(self) -> None:
        assert self._reply is not None
        if self._reply.done():
            return
        complete = self._message_done and self._body_size <= self.body_limit
        body = b"".join(self._body)
        response = Response(self._parser.get_status_code(), self._headers, body, complete)
        if not (complete and self._parser.should_keep_alive()):
            self.close()
        self._reply.set_result(response)

    def _framed_by_close(self) -> bool:
        """Say whether the response body ends where the connection does (RFC 9112 6.3: no length, not chunked)."""
        coding = self._headers.get("transfer-encoding", "").lower().rstrip()
        return "content-length" not in self._headers and not coding.endswith("chunked")

    def _fail(self, error: Exception) -> None:
        if self._reply is not None and not self._reply.done():
            self._reply.set_exception(error)
        self.close()

    def reusable(self) -> bool:
        return (not self.closed and self._message_done and self.transport is not None
                and not self.transport.is_closing() and time.monotonic() - self.idle_since < IDLE_TIMEOUT_S)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


@dataclass
class Http1Client:
    """POSTs over pooled HTTP/1.1 connections, for the event loop it is used on."""

    resolve: Resolve
    body_limit: int
    max_open: int | None = None  # sockets open at once, idle ones included: the oldest idle is closed first
    _idle: dict[Origin, list[_Connection]] = field(default_factory=dict)
    _open: set[_Connection] = field(default_factory=set)
    _addresses: dict[tuple[str, int], tuple[float, list[str]]] = field(default_factory=dict)
    _tls: ssl.SSLContext | None = None

    async def post(self, url: str, headers: dict[str, str], body: bytes) -> Response:
        """POST `body` to `url`; raise OSError, ResponseError or ValueError when no answer could be read."""
        origin, target = Origin.of(url)
        if origin.scheme not in ("http", "https") or not origin.host:
            raise ValueError(f"not an http(s) URL: {url!r}")
        request = _request_bytes(origin, target, headers, body)
        connection = self._pooled(origin)
        if connection is not None:
            try:
                return await self._use(origin, connection, request)
            except ConnectionResetError:
                pass  # the receiver closed the idle connection as we wrote: try once on a new one
        return await self._use(origin, await self._connect(origin), request)

    async def _use(self, origin: Origin, connection: _Connection, request: bytes) -> Response:
        response = await connection.exchange(request)
        if connection.reusable():
            connection.idle_since = time.monotonic()
            idle = self._idle.setdefault(origin, [])
            if len(idle) < MAX_IDLE_PER_ORIGIN:
                idle.append(connection)
            else:
                connection.close()
        return response

    def _pooled(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.reusable():
                return connection
            connection.close()
        return None

    async def _connect(self, origin: Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = self._tls_context() if origin.scheme == "https" else None
        error: OSError | None = None
        for address in await self._resolve(origin.host, origin.port):
            self._make_room()
            try:
                _, connection = await loop.create_connection(
                    lambda: _Connection(self.body_limit), host=address, port=origin.port, ssl=tls,
                    server_hostname=origin.host if tls else None)
                self._open.add(connection)
                return connection
            except OSError as failed:
                error = failed
        raise error or OSError(f"{origin.host} has no address to connect to")

    def open_sockets(self) -> int:
        """How many connections are open, in use or idle."""
        self._open = {connection for connection in self._open if not connection.closed}
        return len(self._open)

    def _make_room(self) -> None:
        """Close the longest-idle connections until one more socket stays within `max_open`."""
        if self.max_open is None:
            return
        while self.open_sockets() >= self.max_open:
            pools = [idle for idle in self._idle.values() if idle]
            if not pools:
                return  # every socket is in use: the caller's budget keeps them under max_open
            oldest = min(pools, key=lambda idle: idle[0].idle_since)
            oldest.pop(0).close()

    async def _resolve(self, host: str, port: int) -> list[str]:
        cached = self._addresses.get((host, port))
        if cached is not None and time.monotonic() - cached[0] < DNS_TTL_S:
            return cached[1]
        addresses = await self.resolve(host, port)
        self._addresses[(host, port)] = (time.monotonic(), addresses)
        return addresses

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


def _request_bytes(origin: Origin, target: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"POST {target} HTTP/1.1", f"Host: {origin.host_header}", f"Content-Length: {len(body)}"]
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} holds a line break")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
