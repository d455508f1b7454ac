"""A push as the handler sees it: Dovecote's envelope (docs/contract.md#push) and the attempt number."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dovecote_receiver.signature import MalformedPush

ENVELOPE_FIELDS = ("id", "type", "version", "room", "correlation_id", "timestamp", "data")


@dataclass(frozen=True)
class Push:
    """One event Dovecote pushed: `id` is the message id (the `webhook-id`, the same on every retry)."""

    id: str
    type: str
    version: str
    room: str
    correlation_id: str
    timestamp: str  # when it was published, ISO 8601
    data: Any  # the payload
    attempt: int  # 1 on the first try (X-Delivery-Attempt)
    body: bytes  # the raw body, as signed

    @classmethod
    def parse(cls, webhook_id: str, headers: Mapping[str, str], body: bytes) -> Push:
        """Read a verified push; raise MalformedPush if the body is not the envelope of `webhook_id`."""
        try:
            envelope = json.loads(body)
        except ValueError:
            raise MalformedPush("the body is not JSON") from None
        if not isinstance(envelope, dict) or any(name not in envelope for name in ENVELOPE_FIELDS):
            raise MalformedPush(f"the body is not a push envelope ({', '.join(ENVELOPE_FIELDS)})")
        if envelope["id"] != webhook_id:
            raise MalformedPush("the body's id is not the webhook-id")
        attempt = {name.lower(): value for name, value in headers.items()}.get("x-delivery-attempt", "1")
        return cls(
            id=webhook_id, type=str(envelope["type"]), version=str(envelope["version"]), room=str(envelope["room"]),
            correlation_id=str(envelope["correlation_id"]), timestamp=str(envelope["timestamp"]),
            data=envelope["data"], attempt=int(attempt) if attempt.isdigit() else 1, body=body,
        )
