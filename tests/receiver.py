"""A real local HTTP server standing in for webhook subscribers: records requests, answers by script."""

from __future__ import annotations

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
