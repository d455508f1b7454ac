"""One push in, one reply out: the part every integration (Django, WSGI, ASGI) shares.

Order: verify the signature and the timestamp before reading the body as JSON; then store the push
in the inbox and run the handler in one transaction (`Store`); then answer:

| outcome                                   | status                    |
|-------------------------------------------|---------------------------|
| handled now, or handled before (a duplicate) | 200                    |
| headers missing, body not the envelope    | 400                       |
| no signature verifies, timestamp stale    | 401                       |
| handler raised Unsubscribe                | 410: Dovecote disables the subscription |
| handler raised SlowDown                   | 429 or 503 with Retry-After |
| handler raised anything else              | 500: Dovecote retries with its backoff |
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dovecote_receiver.outcomes import SlowDown, Unsubscribe
from dovecote_receiver.push import Push
from dovecote_receiver.signature import PushRefused, Verifier

log = logging.getLogger("dovecote_receiver")

# Store(push) runs the handler for a push not seen before, in the inbox's transaction; it returns
# False for a push the inbox already holds (handled before) without running the handler.
Store = Callable[[Push], bool]


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def content(self) -> bytes:
        return json.dumps(self.body).encode()

    def header_list(self) -> list[tuple[str, str]]:
        return [("Content-Type", "application/json"), *self.headers.items()]


def receive(verifier: Verifier, store: Store, headers: Mapping[str, str], body: bytes) -> Reply:
    """Verify, store and handle one push; return the reply Dovecote should get."""
    try:
        push = Push.parse(verifier.verify(headers, body), headers, body)
    except PushRefused as refused:
        log.warning("push refused (%s): %s", refused.status, refused)
        return Reply(refused.status, {"error": str(refused)})
    try:
        handled_now = store(push)
    except Unsubscribe as gone:
        return Reply(gone.status, {"error": str(gone) or "unsubscribed"})
    except SlowDown as slow:
        return Reply(slow.status, {"error": str(slow)}, {"Retry-After": str(slow.retry_after_s)})
    except Exception:
        log.exception("handler failed on push %s (attempt %s): Dovecote will retry it", push.id, push.attempt)
        return Reply(500, {"error": "the handler failed; the push was not recorded"})
    return Reply(200, {"id": push.id, "duplicate": not handled_now})
