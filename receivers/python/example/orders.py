"""An example receiver: a shop that records Dovecote's `order.*` pushes in SQLite, each exactly once.

    DOVECOTE_SECRETS=whsec_… python receivers/python/example/orders.py --port 9000 --database orders.sqlite3

then subscribe `http://127.0.0.1:9000/` to a room (DOVECOTE_PUSH_ALLOW_HOSTS=127.0.0.1 on Dovecote's side).
During a secret rotation give both secrets, comma-separated: pushes signed with either are accepted.
The handler writes the shop's own table on the inbox's connection, so the order and the inbox row
commit together: a retried or duplicated push never creates a second order.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from dovecote_receiver import Inbox, Push, SlowDown, Unsubscribe, make_asgi_app, make_wsgi_app

Handler = Callable[[Push, sqlite3.Connection], object]


def connector(database: str) -> Callable[[], sqlite3.Connection]:
    """Return a function opening the shop's database (one connection per push)."""
    return lambda: sqlite3.connect(database, timeout=30)


def create_tables(database: str, inbox: Inbox) -> None:
    connection = connector(database)()
    try:
        connection.execute("PRAGMA journal_mode=WAL")  # readers do not wait for the writer
        inbox.create_table(connection)
        connection.execute(
            "CREATE TABLE IF NOT EXISTS orders (order_id INTEGER PRIMARY KEY, total REAL NOT NULL,"
            " status TEXT NOT NULL, webhook_id TEXT NOT NULL)"
        )
        connection.commit()
    finally:
        connection.close()


def handle_order(push: Push, connection: sqlite3.Connection) -> None:
    """The shop's own work, on the inbox's connection and so in its transaction."""
    if push.type == "order.created":
        # No OR IGNORE: an order created twice would fail loudly, which the inbox never lets happen.
        connection.execute("INSERT INTO orders (order_id, total, status, webhook_id) VALUES (?, ?, 'open', ?)",
                           (push.data["order_id"], push.data.get("total", 0), push.id))
    elif push.type == "order.cancelled":
        connection.execute("UPDATE orders SET status = 'cancelled' WHERE order_id = ?", (push.data["order_id"],))
    elif push.type == "shop.closed":
        raise Unsubscribe("this shop is closed: send nothing more")
    elif push.type == "shop.busy":
        raise SlowDown(int(push.data.get("retry_after_s", 30)))
    # Other event types: recorded in the inbox, nothing else to do.


def make_app(database: str, secrets: Sequence[str], handler: Handler = handle_order) -> Callable[..., Any]:
    """The WSGI app of the shop."""
    inbox = Inbox()
    create_tables(database, inbox)
    return make_wsgi_app(secrets=secrets, connect=connector(database), handler=handler, inbox=inbox)


def make_asgi(database: str, secrets: Sequence[str], handler: Handler = handle_order) -> Callable[..., Any]:
    """The same shop as an ASGI app (for uvicorn, hypercorn, …)."""
    inbox = Inbox()
    create_tables(database, inbox)
    return make_asgi_app(secrets=secrets, connect=connector(database), handler=handler, inbox=inbox)


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(database: str, secrets: Sequence[str], host: str = "127.0.0.1", port: int = 0,
          handler: Handler = handle_order) -> ThreadingServer:
    """Return a threaded WSGI server for the shop, bound but not yet serving (call serve_forever)."""
    return make_server(host, port, make_app(database, secrets, handler), ThreadingServer, QuietHandler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--database", default="orders.sqlite3")
    options = parser.parse_args()
    secrets = [s for s in os.environ.get("DOVECOTE_SECRETS", "").split(",") if s]
    if not secrets:
        parser.error("set DOVECOTE_SECRETS to the subscription's signing secret (whsec_…)")
    server = serve(options.database, secrets, options.host, options.port)
    print(f"receiving pushes on http://{options.host}:{server.server_port}/ into {options.database}")
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
