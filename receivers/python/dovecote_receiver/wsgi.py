"""A WSGI app that receives Dovecote's pushes into a transactional inbox (no framework needed).

    app = make_wsgi_app(secrets=["whsec_…"], connect=lambda: sqlite3.connect("shop.db"), handler=handle)

`handler(push, connection)` does the receiver's own work on `connection`, inside the inbox's
transaction; see dovecote_receiver.core for the replies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from dovecote_receiver.core import Reply, receive
from dovecote_receiver.inbox import Connection, Handler, Inbox, open_inbox, store_with
from dovecote_receiver.signature import Verifier

MAX_BODY_BYTES = 1024 * 1024


def make_verifier(secrets: Sequence[str] | Verifier) -> Verifier:
    return secrets if isinstance(secrets, Verifier) else Verifier(secrets)


def make_wsgi_app(*, secrets: Sequence[str] | Verifier, connect: Callable[[], Connection], handler: Handler,
                  inbox: Inbox | None = None, create_table: bool = True,
                  max_body_bytes: int = MAX_BODY_BYTES) -> Callable[..., Iterable[bytes]]:
    """Return a WSGI app answering POSTs (any path) with the push outcome; it creates the inbox table if missing."""
    verifier = make_verifier(secrets)
    inbox = inbox or Inbox()
    if create_table:
        open_inbox(connect, inbox)
    store = store_with(connect, inbox, handler)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        reply = refusal(environ.get("REQUEST_METHOD", ""), environ.get("CONTENT_LENGTH") or "0", max_body_bytes)
        if reply is None:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            reply = receive(verifier, store, request_headers(environ), body)
        start_response(f"{reply.status} {REASONS.get(reply.status, '')}".strip(), reply.header_list())
        return [reply.content()]

    return app


def refusal(method: str, content_length: str, max_body_bytes: int) -> Reply | None:
    """Return the reply to a request that is no push at all (wrong method, body too large), else None."""
    if method != "POST":
        return Reply(405, {"error": "pushes are POSTed"}, {"Allow": "POST"})
    if not content_length.isdigit():
        return Reply(400, {"error": "Content-Length is required"})
    if int(content_length) > max_body_bytes:
        return Reply(413, {"error": f"the body is over {max_body_bytes} bytes"})
    return None


def request_headers(environ: dict[str, Any]) -> dict[str, str]:
    return {name[5:].replace("_", "-").lower(): value for name, value in environ.items() if name.startswith("HTTP_")}


REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed", 410: "Gone",
           413: "Content Too Large", 429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable"}
