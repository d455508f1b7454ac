"""An ASGI app that receives Dovecote's pushes into a transactional inbox (no framework needed).

    app = make_asgi_app(secrets=["whsec_…"], connect=lambda: sqlite3.connect("shop.db"), handler=handle)

DB-API drivers block, so the inbox transaction and `handler(push, connection)` run in a worker
thread (`asyncio.to_thread`); the event loop only reads the request and writes the reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from dovecote_receiver.core import Reply, receive
from dovecote_receiver.inbox import Connection, Handler, Inbox, open_inbox, store_with
from dovecote_receiver.signature import Verifier
from dovecote_receiver.wsgi import MAX_BODY_BYTES, make_verifier, refusal

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def make_asgi_app(*, secrets: Sequence[str] | Verifier, connect: Callable[[], Connection], handler: Handler,
                  inbox: Inbox | None = None, create_table: bool = True,
                  max_body_bytes: int = MAX_BODY_BYTES) -> Callable[[dict[str, Any], Receive, Send], Awaitable[None]]:
    """Return an ASGI (HTTP) app answering POSTs (any path) with the push outcome."""
    verifier = make_verifier(secrets)
    inbox = inbox or Inbox()
    if create_table:
        open_inbox(connect, inbox)
    store = store_with(connect, inbox, handler)

    async def app(scope: dict[str, Any], receive_message: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets: nothing to do
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        reply = refusal(scope["method"], headers.get("content-length", "0"), max_body_bytes)
        if reply is None:
            body = await read_body(receive_message, max_body_bytes)
            if body is None:
                reply = Reply(413, {"error": f"the body is over {max_body_bytes} bytes"})
            else:
                reply = await asyncio.to_thread(receive, verifier, store, headers, body)
        await send({"type": "http.response.start", "status": reply.status,
                    "headers": [(k.lower().encode(), v.encode()) for k, v in reply.header_list()]})
        await send({"type": "http.response.body", "body": reply.content()})

    return app


async def read_body(receive_message: Receive, limit: int) -> bytes | None:
    """Return the request body, or None once it grows past `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive_message()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)
