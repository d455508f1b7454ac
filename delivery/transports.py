"""Every HTTP request to a subscriber goes through here: signed, timed out, classified."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

from delivery.models import DeliveryAttempt
from delivery.url_safety import UnsafePushUrl, check_push_url

USER_AGENT = "Dovecote-Webhooks/1.0"
ERROR_BODY_CHARS = 500
Outcome = DeliveryAttempt.Outcome


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Return the Standard Webhooks signature header value, `v1,<base64 HMAC-SHA256>`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


@dataclass(frozen=True)
class PushResult:
    """What one POST to a subscriber came to."""

    outcome: str
    duration_ms: int
    status_code: int | None = None
    error: str = ""
    retry_after_ms: int | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.SUCCESS

    @property
    def gone(self) -> bool:
        """Say whether the subscriber asked us to stop for good (410 Gone)."""
        return self.status_code == 410


@dataclass(frozen=True)
class PushRequest:
    url: str
    body: bytes
    message_id: str
    correlation_id: str
    attempt: int
    signing_secret: str
    timeout_ms: int


class PushTransport:
    """A pooled HTTP client for push deliveries; safe to share between threads."""

    def __init__(self) -> None:
        self._client = httpx.Client(follow_redirects=False, headers={"User-Agent": USER_AGENT})

    def close(self) -> None:
        self._client.close()

    def post(self, request: PushRequest) -> PushResult:
        """POST one delivery and classify the answer; never raises for a subscriber's failure."""
        started = time.monotonic()
        try:
            check_push_url(request.url)  # again at every attempt: the host's DNS may have changed
        except UnsafePushUrl as refused:
            return PushResult(Outcome.FAILURE, _ms_since(started), error=f"push URL refused: {refused.reason}")
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "webhook-id": request.message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": sign(request.signing_secret, request.message_id, timestamp, request.body),
            "X-Correlation-ID": request.correlation_id,
            "X-Delivery-Attempt": str(request.attempt),
        }
        try:
            response = self._client.post(
                request.url, content=request.body, headers=headers, timeout=request.timeout_ms / 1000
            )
        except httpx.TimeoutException as error:
            return PushResult(Outcome.TIMEOUT, _ms_since(started), error=f"timed out after "
                              f"{request.timeout_ms} ms ({type(error).__name__})")
        except httpx.HTTPError as error:
            return PushResult(Outcome.CONNECTION_ERROR, _ms_since(started),
                              error=f"{type(error).__name__}: {error}")
        duration = _ms_since(started)
        if response.is_success:
            return PushResult(Outcome.SUCCESS, duration, status_code=response.status_code)
        return PushResult(
            Outcome.FAILURE,
            duration,
            status_code=response.status_code,
            error=f"HTTP {response.status_code}: {response.text[:ERROR_BODY_CHARS]}".strip(),
            retry_after_ms=retry_after_ms(response) if response.status_code in (429, 503) else None,
        )


# The longest wait a receiver's Retry-After can ask for (docs/security.md); longer values are cut to it.
MAX_RETRY_AFTER_MS = 24 * 3600 * 1000
RETRY_AFTER_MAX_CHARS = 64  # an HTTP date is 29 characters; a longer header is not read


def retry_after_ms(response: httpx.Response) -> int | None:
    """Read Retry-After (seconds or an HTTP date) as milliseconds from now, at most MAX_RETRY_AFTER_MS.

    The receiver writes this header, so its value is bounded before any arithmetic: a number of any
    length or a date far ahead is read as "wait the longest", never as an overflow.
    """
    value = response.headers.get("Retry-After", "").strip()
    if not value or len(value) > RETRY_AFTER_MAX_CHARS:
        return MAX_RETRY_AFTER_MS if value.isascii() and value.isdigit() else None
    if value.isascii() and value.isdigit():
        return min(int(value) * 1000, MAX_RETRY_AFTER_MS)
    try:
        when = parsedate_to_datetime(value)
        seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError, OSError):
        return None
    return int(min(max(0.0, seconds * 1000), MAX_RETRY_AFTER_MS))


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
