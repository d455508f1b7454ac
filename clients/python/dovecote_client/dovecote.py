"""`Dovecote`: one authenticated client, the generated operations called through it, replies checked."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

import httpx

from dovecote_api import AuthenticatedClient
from dovecote_api.api.messages import messages_publish, messages_publish_batch
from dovecote_api.models import BatchPublishRequest, PublishReply, PublishRequest
from dovecote_api.types import UNSET, Response
from dovecote_client.consume import Consumed, Handler, consume

# Replies worth sending the same request again for: the key's rate, an overloaded or restarting server.
RETRIED_STATUSES = frozenset({429, 502, 503, 504})


class DovecoteError(Exception):
    """A reply outside 2xx: its status, its JSON body (or text) and, on 429/503, `Retry-After` seconds."""

    def __init__(self, status: int, body: Any, retry_after: float | None = None) -> None:
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


@dataclass(frozen=True)
class Event:
    """One event to publish. Without an `idempotency_key` one is chosen when it is sent, once."""

    event_type: str
    payload: Any
    event_version: str = "1"
    correlation_id: str | None = None
    idempotency_key: str | None = None

    def request(self) -> PublishRequest:
        return PublishRequest(
            event_type=self.event_type, event_version=self.event_version, payload=self.payload,
            correlation_id=self.correlation_id or UNSET, idempotency_key=self.idempotency_key or new_key(),
        )


class Dovecote:
    """Dovecote's API with one key: `call` any generated operation, or use the helpers below.

    `retries` applies to publishing only: a publish carries an idempotency key, so sending it again
    after a lost reply, a 429 or a 503 cannot publish twice. Other calls are made once.
    """

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float = 30.0, retries: int = 4,
                 sleep: Callable[[float], None] = time.sleep, httpx_args: dict[str, Any] | None = None) -> None:
        # The timeout must outlast a long poll (`wait_ms` up to 20 s).
        self.api = AuthenticatedClient(base_url=base_url, token=api_key, timeout=httpx.Timeout(timeout_s),
                                       httpx_args=httpx_args or {})
        self.retries = retries
        self.sleep = sleep

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.api.get_httpx_client().close()

    def call(self, operation: ModuleType, *args: Any, **kwargs: Any) -> Any:
        """Call a generated operation (`dovecote_api.api.…` module); return its parsed 2xx reply or raise."""
        return checked(operation.sync_detailed(*args, client=self.api, **kwargs))

    def pages(self, operation: ModuleType, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Yield every item of a paginated list operation, page after page (cursor or page number)."""
        while True:
            page = self.call(operation, *args, **kwargs)
            yield from page.results
            if not page.next_:
                return
            kwargs.update(next_page(page.next_))

    def publish(self, room_id: int, event_type: str, payload: Any, *, version: str = "1",
                correlation_id: str | None = None, idempotency_key: str | None = None) -> PublishReply:
        """Publish one event; retried on a lost reply, 429 and 5xx with the same idempotency key."""
        body = Event(event_type, payload, version, correlation_id, idempotency_key).request()
        return self.retrying(lambda: messages_publish.sync_detailed(room_id, client=self.api, body=body))

    def publish_batch(self, room_id: int, events: Iterable[Event], *,
                      correlation_id: str | None = None) -> list[PublishReply]:
        """Publish up to 500 events in one request (retried as `publish` is); `correlation_id` for those naming none."""
        body = BatchPublishRequest(messages=[event.request() for event in events])
        reply = self.retrying(lambda: messages_publish_batch.sync_detailed(
            room_id, client=self.api, body=body, x_correlation_id=correlation_id or UNSET))
        return reply.messages

    def consume(self, subscription_id: int, handler: Handler, **options: Any) -> Consumed:
        """Pull, handle, ack: see `dovecote_client.consume.consume`."""
        return consume(self, subscription_id, handler, **options)

    def retrying(self, send: Callable[[], Response[Any]]) -> Any:
        """Send until a reply that is not worth retrying, at most `retries` more times; return it checked."""
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = send()
            except httpx.TransportError:
                if last:
                    raise
                self.sleep(backoff_s(attempt))
                continue
            if response.status_code in RETRIED_STATUSES and not last:
                self.sleep(max(retry_after_s(response) or 0.0, backoff_s(attempt)))
                continue
            return checked(response)
        raise AssertionError("unreachable")


def checked(response: Response[Any]) -> Any:
    """Return the parsed body of a 2xx reply; raise DovecoteError for any other."""
    if 200 <= response.status_code < 300:
        return response.parsed
    try:
        body = httpx.Response(response.status_code, content=response.content).json()
    except ValueError:
        body = response.content.decode(errors="replace")
    raise DovecoteError(response.status_code, body, retry_after_s(response))


def next_page(url: str) -> dict[str, Any]:
    """Return the arguments that ask for the page a list's `next` link names."""
    query = parse_qs(urlsplit(url).query)
    if "cursor" in query:
        return {"cursor": query["cursor"][0]}
    if "page" in query:
        return {"page": int(query["page"][0])}
    raise ValueError(f"no cursor or page in the next link {url!r}")


def retry_after_s(response: Response[Any]) -> float | None:
    value = response.headers.get("Retry-After")
    return float(value) if value and value.isdigit() else None


def backoff_s(attempt: int) -> float:
    """0.5 s, 1 s, 2 s, … (at most 30 s), with jitter so that many clients do not retry in step."""
    return min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)


def new_key() -> str:
    return f"dc-{uuid.uuid4()}"
