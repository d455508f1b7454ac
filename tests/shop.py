"""The receiver kit's example shop (receivers/python/example/orders.py), served on a thread for tests."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from dovecote_receiver import sign

EXAMPLE = Path(__file__).resolve().parent.parent / "receivers" / "python" / "example" / "orders.py"


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("dovecote_example_orders", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


orders = load_example()


class Shop:
    """The example shop on 127.0.0.1: its WSGI app (maybe wrapped), its SQLite file, what it answered."""

    def __init__(self, database: Path, secrets: list[str], handler: Callable[..., object] | None = None,
                 wrap: Callable[[Any], Any] | None = None) -> None:
        self.database = str(database)
        self.server = orders.serve(self.database, secrets, handler=handler or orders.handle_order)
        if wrap:
            self.server.set_app(wrap(self.server.get_app()))
        self.statuses: list[int] = []
        self.server.set_app(self.recording(self.server.get_app()))
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/"

    def recording(self, app: Any) -> Any:
        def recorded(environ: dict, start_response: Callable[..., Any]) -> Any:
            def start(status: str, headers: list, *args: Any) -> Any:
                self.statuses.append(int(status.split()[0]))
                return start_response(status, headers, *args)
            return app(environ, start)
        return recorded

    def rows(self, sql: str) -> list[tuple]:
        with sqlite3.connect(self.database) as connection:
            return connection.execute(sql).fetchall()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def envelope(message_id: str, data: Any, event_type: str = "order.created") -> bytes:
    return json.dumps({"id": message_id, "type": event_type, "version": "1", "room": "shop", "correlation_id": "c",
                       "timestamp": "2026-11-23T12:00:00+00:00", "data": data}).encode()


def signed_headers(secrets: list[str], message_id: str, body: bytes, timestamp: int | None = None,
                   attempt: int = 1) -> dict[str, str]:
    """Headers of a push signed with every secret in `secrets` (more than one: a rotation overlap)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    signatures = " ".join(sign(secret, message_id, timestamp, body) for secret in secrets)
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": signatures,
            "content-type": "application/json", "x-delivery-attempt": str(attempt)}


def post(url: str, headers: dict[str, str], body: bytes) -> httpx.Response:
    return httpx.post(url, headers=headers, content=body, timeout=10)
