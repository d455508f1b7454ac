"""A fast asyncio webhook receiver for benchmarks: keep-alive HTTP/1.1, records every arrival."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Arrival:
    at: float  # time.monotonic() in this process
    webhook_id: str
    attempt: int


Answer = Callable[[str, int], int]  # (webhook id, attempt) -> status code


class FastReceiver:
    """Answer every POST at once (204, or what `answer` says) from an event loop in a thread."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer = answer or (lambda webhook_id, attempt: 204)
        self.arrivals: list[Arrival] = []
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def reset(self, answer: Answer | None = None) -> None:
        self.answer = answer or (lambda webhook_id, attempt: 204)
        self.arrivals = []

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                headers = parse_headers(head)
                await reader.readexactly(int(headers.get("content-length", "0")))
                webhook_id, attempt = headers.get("webhook-id", ""), int(headers.get("x-delivery-attempt", "0"))
                self.arrivals.append(Arrival(time.monotonic(), webhook_id, attempt))
                status = self.answer(webhook_id, attempt)
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode())
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def parse_headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines) if name}
