"""Every HTTP request to a subscriber goes through here: signed, checked, bounded, classified.

`PushTransport` is the asyncio client (delivery/http1.py) shared by every push session of a
worker's event loop, with keep-alive connection pools of at most `max_sockets` sockets (the engine's
budget, delivery/push/budget.py). What it guarantees for each attempt:
- it connects only to addresses that passed the push-URL rules (subscriptions/push_urls.py): a host
  is resolved once (for DNS_TTL_S), every address checked, and connections go to those
  addresses, so a DNS answer that changes after the check (rebinding) is never used; an address
  literal is checked before the request; proxy variables in the environment play no part;
- one wall-clock deadline, `timeout_ms`, covers everything: connecting, sending, the response
  head and reading its body. A receiver that drips bytes is cut off when it runs out;
- it reads at most RESPONSE_BYTES of a response body (for the error text), and no more than has
  arrived with the head: a longer or slower body is not waited for, and its connection is closed
  instead of reused; the error keeps the body's readable text, at most ERROR_CHARS (an HTML error
  page is reduced to its words: dovecote/error_text.py), never the page;
- redirects are not followed; a Retry-After header is read within bounds (MAX_RETRY_AFTER_MS).
Failures come back as values (`PushResult`), never as exceptions: whatever goes wrong inside (a
receiver the parser chokes on, a bug here) ends as a failed attempt, so the caller always records
an outcome and frees its slot.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import logging
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache

from django.conf import settings

from delivery.http1 import Http1Client, ResponseError
from delivery.models import DeliveryAttempt
from dovecote.error_text import readable
from subscriptions.push_urls import UnsafePushUrl, checked_addresses, parse_push_url

log = logging.getLogger("delivery.transports")

USER_AGENT = "Dovecote-Webhooks/1.0"
RESPONSE_BYTES = 8 * 1024  # of a response body read at most; the rest is never read
MAX_RETRY_AFTER_MS = 24 * 3600 * 1000  # a longer Retry-After is read as a day
RETRY_AFTER_MAX_CHARS = 64  # an HTTP date is 29 characters; a longer header is not read
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
    finished_at: datetime | None = None  # when the attempt ended: retries are timed from here

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.SUCCESS

    @property
    def gone(self) -> bool:
        """Say whether the subscriber asked us to stop for good (410 Gone)."""
        return self.status_code == 410


def signatures(secrets: tuple[str, ...], message_id: str, timestamp: int, body: bytes) -> str:
    """Return the `webhook-signature` value: one signature per secret, space-separated (Standard Webhooks)."""
    return " ".join(sign(secret, message_id, timestamp, body) for secret in secrets)


@dataclass(frozen=True)
class PushRequest:
    url: str
    body: bytes
    message_id: str
    correlation_id: str
    attempt: int
    signing_secret: str
    timeout_ms: int
    traceparent: str = ""  # W3C trace context for the receiver to continue, when the message has one
    previous_secret: str = ""  # during a rotation's overlap: it signs too, a second signature

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.signing_secret, self.previous_secret) if self.previous_secret else (self.signing_secret,)

    def headers(self, timestamp: int) -> dict[str, str]:
        """The Standard Webhooks headers and Dovecote's own, signed for `timestamp` (unix seconds)."""
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "webhook-id": self.message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signatures(self.secrets, self.message_id, timestamp, self.body),
            "X-Correlation-ID": self.correlation_id,
            "X-Delivery-Attempt": str(self.attempt),
        }
        if self.traceparent:
            headers["traceparent"] = self.traceparent
        return headers


class PushTransport:
    """The HTTP client of push deliveries (delivery/http1.py), for the event loop it is first used on."""

    def __init__(self, max_sockets: int | None = None) -> None:
        self.max_sockets = max_sockets  # open at once, idle keep-alive connections included
        self._client: Http1Client | None = None

    def open_sockets(self) -> int:
        """How many connections to subscribers are open, in use or idle."""
        return 0 if self._client is None else self._client.open_sockets()

    async def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def post(self, request: PushRequest) -> PushResult:
        """POST one delivery and classify the answer; never raises (an unexpected error is a failed attempt too)."""
        started = time.monotonic()
        try:
            result = await self._post(request)
        except Exception as error:  # the guarantee above: every failure is a value
            log.exception("a push POST failed unexpectedly; it is recorded as a failed attempt")
            result = PushResult(Outcome.CONNECTION_ERROR, _ms_since(started),
                                error=readable(f"unexpected error: {type(error).__name__}: {error}"))
        return replace(result, finished_at=datetime.now(UTC))

    async def _post(self, request: PushRequest) -> PushResult:
        started = time.monotonic()
        try:
            check_address_literal(request.url)
        except UnsafePushUrl as refused:
            return PushResult(Outcome.FAILURE, _ms_since(started), error=f"push URL refused: {refused.reason}")
        if self._client is None:
            self._client = Http1Client(resolve=checked_resolution, body_limit=RESPONSE_BYTES,
                                       max_open=self.max_sockets)
        try:
            async with asyncio.timeout(request.timeout_ms / 1000):
                response = await self._client.post(request.url, request.headers(int(time.time())), request.body)
        except TimeoutError:
            return PushResult(Outcome.TIMEOUT, _ms_since(started), error=f"timed out after {request.timeout_ms} ms")
        except UnsafePushUrl as refused:
            return PushResult(Outcome.FAILURE, _ms_since(started), error=f"push URL refused: {refused.reason}")
        except (OSError, ResponseError, ValueError) as error:
            return PushResult(Outcome.CONNECTION_ERROR, _ms_since(started), error=f"{type(error).__name__}: {error}")
        status = response.status
        if 200 <= status < 300:
            return PushResult(Outcome.SUCCESS, _ms_since(started), status_code=status)
        text = response.body.decode("utf-8", "replace")
        return PushResult(
            Outcome.FAILURE, _ms_since(started), status_code=status, error=readable(f"HTTP {status}: {text}"),
            retry_after_ms=retry_after_ms(response.headers.get("retry-after", "")) if status in (429, 503) else None,
        )


async def checked_resolution(host: str, port: int) -> list[str]:
    """The addresses of `host` to connect to, each checked by the push-URL rules (UnsafePushUrl if one fails).

    Resolved once here and connected to as they are: no second lookup can answer otherwise.
    """
    addresses = await asyncio.get_running_loop().run_in_executor(None, checked_addresses, host, port)
    return [str(address) for address in addresses]


def check_address_literal(url: str) -> None:
    """Check the URL's form, and its host when it is an address literal (names are checked at connection)."""
    if reason := _refusal(url, tuple(settings.DOVECOTE_PUSH_ALLOW_HOSTS)):
        raise UnsafePushUrl(reason)


@lru_cache(maxsize=4096)
def _refusal(url: str, allowed: tuple[str, ...]) -> str:
    """Why `url` is refused before connecting ("" if it is not); the same answer every time for these settings."""
    try:
        host, port = parse_push_url(url)
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return ""  # a name: the resolver checks what it resolves to
        checked_addresses(host, port)
    except UnsafePushUrl as refused:
        return refused.reason
    return ""


def retry_after_ms(value: str) -> int | None:
    """Read a Retry-After value (seconds or an HTTP date) as ms from now, at most MAX_RETRY_AFTER_MS.

    The receiver writes this header, so its value is bounded before any arithmetic: a number of any
    length or a date far ahead is read as "wait the longest", never as an overflow; None if unreadable.
    """
    value = value.strip()
    if value.isascii() and value.isdigit():
        return MAX_RETRY_AFTER_MS if len(value) > RETRY_AFTER_MAX_CHARS else min(int(value) * 1000, MAX_RETRY_AFTER_MS)
    if not value or len(value) > RETRY_AFTER_MAX_CHARS:
        return None
    try:
        seconds = parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None
    return int(min(max(0.0, seconds * 1000), MAX_RETRY_AFTER_MS))


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def post_once(request: PushRequest) -> PushResult:
    """POST one delivery from code that has no event loop of its own (a command, a test)."""
    async def post() -> PushResult:
        transport = PushTransport()
        try:
            return await transport.post(request)
        finally:
            await transport.close()

    return asyncio.run(post())
