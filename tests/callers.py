"""The four kinds of API caller every endpoint is tested with, and a JSON request helper."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.test import Client

Response = Any  # Django's test response: an HttpResponse with .json()

KINDS = ("admin", "room key", "other room's key", "no key")


def call_api(client: Client, method: str, path: str, body: object, key: str | None) -> Response:
    """Send `body` as JSON with `key` as the bearer token (none when `key` is None)."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    if method == "get":
        return client.get(path, body or {}, **headers)
    data = body if isinstance(body, str) else json.dumps(body if body is not None else {})
    return getattr(client, method)(path, data, content_type="application/json", **headers)


@dataclass(frozen=True)
class Caller:
    """An admin key, a key of the room under test, a key of another room, or no key at all."""

    kind: str
    key: str | None

    def __str__(self) -> str:
        return self.kind

    @property
    def may_use_room(self) -> bool:
        return self.kind in ("admin", "room key")

    def expected(self, ok: int, *, room_key_may: bool = True) -> int:
        """Return the status this caller should get from an endpoint answering `ok` to those allowed."""
        if self.kind == "no key":
            return 401
        if self.kind == "other room's key" or (self.kind == "room key" and not room_key_may):
            return 403
        return ok

    def call(self, client: Client, method: str, path: str, body: object = None) -> Response:
        return call_api(client, method, path, body, self.key)
