"""Standard Webhooks signatures: sign a push, and verify one against one or more secrets.

A push carries `webhook-id`, `webhook-timestamp` (unix seconds of this attempt) and
`webhook-signature`: space-separated `v1,<base64 HMAC-SHA256>` entries over "{id}.{timestamp}.{body}".
During a secret rotation the sender signs with the old and the new secret at once, and a receiver
may know either: the push is genuine when any entry verifies with any configured secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable, Iterable, Mapping

SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_S = 300  # the Standard Webhooks recommendation: five minutes either way


class PushRefused(Exception):
    """A request that is no genuine push; `status` is the HTTP status to answer it with."""

    status = 400


class MalformedPush(PushRefused):
    """Headers missing or unreadable, or a body that is not Dovecote's envelope: 400."""


class ForgedPush(PushRefused):
    """No signature verifies with any configured secret: 401."""

    status = 401


class StalePush(PushRefused):
    """The timestamp is outside the tolerance (a replayed or delayed request): 401."""

    status = 401


def secret_key(secret: str) -> bytes:
    """Return the HMAC key of a `whsec_…` secret (the base64 after the prefix)."""
    try:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error:
        raise ValueError("a signing secret is `whsec_` followed by base64") from None


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """Return the `v1,…` signature of a push, as Dovecote computes it."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(secret_key(secret), signed, hashlib.sha256).digest()).decode()


class Verifier:
    """Verify pushes against every secret given (the current one, and the previous during a rotation)."""

    def __init__(self, secrets: Iterable[str], *, tolerance_s: int = DEFAULT_TOLERANCE_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.keys = [secret_key(secret) for secret in secrets]
        if not self.keys:
            raise ValueError("give at least one signing secret")
        self.tolerance_s = tolerance_s
        self.clock = clock

    def verify(self, headers: Mapping[str, str], body: bytes) -> str:
        """Return the push's `webhook-id` if it is genuine and fresh; raise a PushRefused otherwise."""
        headers = {name.lower(): value for name, value in headers.items()}
        webhook_id, timestamp, signatures = (headers.get(name, "") for name in
                                             ("webhook-id", "webhook-timestamp", "webhook-signature"))
        if not (webhook_id and timestamp and signatures):
            raise MalformedPush("webhook-id, webhook-timestamp and webhook-signature are required")
        try:
            sent_at = int(timestamp)
        except ValueError:
            raise MalformedPush("webhook-timestamp is not unix seconds") from None
        if abs(self.clock() - sent_at) > self.tolerance_s:
            raise StalePush(f"webhook-timestamp is more than {self.tolerance_s} s away from now")
        if not self.any_signature_verifies(f"{webhook_id}.{timestamp}.".encode() + body, signatures):
            raise ForgedPush("no signature verifies with the configured secrets")
        return webhook_id

    def any_signature_verifies(self, signed: bytes, signatures: str) -> bool:
        expected = [hmac.new(key, signed, hashlib.sha256).digest() for key in self.keys]
        for entry in signatures.split(" "):
            version, _, encoded = entry.partition(",")
            if version != "v1":
                continue  # other schemes (v1a: asymmetric) are not Dovecote's
            try:
                given = base64.b64decode(encoded, validate=True)
            except binascii.Error:
                continue
            # compare_digest takes the same time wherever the bytes differ: no timing oracle.
            if any(hmac.compare_digest(given, digest) for digest in expected):
                return True
        return False
