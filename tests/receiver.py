"""A real local HTTP server standing in for webhook subscribers: records requests, answers by script."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    status: int = 204
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: bytes = b""


@dataclass(frozen=True)
class Received:
    at: float  # time.monotonic() when the request arrived
    path: str
    headers: dict[str, str]
    body: bytes


Script = Callable[[int], Reply]  # request number (1-based) on that path -> reply


def always(status: int, **headers: str) -> Script:
    return lambda n: Reply(status, dict(headers))


def failing_then(failures: int, status: int = 500) -> Script:
    return lambda n: Reply(status if n <= failures else 204)


class Receiver:
    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self.received: dict[str, list[Received]] = defaultdict(list)
        self.active: dict[str, int] = defaultdict(int)
        self.most_active: dict[str, int] = defaultdict(int)  # the most requests in progress at once
        # (request number, time.monotonic() just before its answer was written), per path
        self.answered: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self._lock = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def script(self, path: str, script: Script) -> str:
        """Answer requests on `path` by `script`; return the path's URL."""
        self.scripts[path] = script
        return self.url(path)

    def requests(self, path: str) -> list[Received]:
        with self._lock:
            return list(self.received[path])

    def wait_for(self, path: str, count: int, timeout: float = 15.0) -> list[Received]:
        """Wait until `path` has had `count` requests; return them (fewer on timeout)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.received[path]) < count and time.monotonic() < deadline:
                self._lock.wait(timeout=deadline - time.monotonic())
            return list(self.received[path])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _record(self, request: Received) -> int:
        with self._lock:
            self.received[request.path].append(request)
            self.active[request.path] += 1
            self.most_active[request.path] = max(self.most_active[request.path], self.active[request.path])
            self._lock.notify_all()
            return len(self.received[request.path])

    def _answering(self, path: str, n: int) -> None:
        with self._lock:
            self.answered[path].append((n, time.monotonic()))

    def _done(self, path: str) -> None:
        with self._lock:
            self.active[path] -= 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                n = receiver._record(Received(time.monotonic(), self.path, dict(self.headers), body))
                reply = receiver.scripts.get(self.path, always(204))(n)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    receiver._answering(self.path, n)
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client gave up (timeout): that is the point of a slow reply
                finally:
                    receiver._done(self.path)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


class SilentReceiver:
    """A real TCP server on 127.0.0.1 that accepts connections, reads what comes, and never answers.

    Counts the connections open now and the most open at once: each is a socket the client holds.
    """

    def __init__(self) -> None:
        self.open = 0
        self.most_open = 0
        self.accepted = 0
        self._selector = selectors.DefaultSelector()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}{path}"

    def close(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            for key, _ in self._selector.select(timeout=0.1):
                if key.fileobj is self._listener:
                    self._accept()
                else:
                    self._read(key.fileobj)  # type: ignore[arg-type]

    def _accept(self) -> None:
        try:
            connection, _ = self._listener.accept()
        except BlockingIOError:
            return
        connection.setblocking(False)
        self._selector.register(connection, selectors.EVENT_READ)
        self.accepted += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)

    def _read(self, connection: socket.socket) -> None:
        try:
            data = connection.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client closed it (its timeout)
            self._selector.unregister(connection)
            connection.close()
            self.open -= 1
