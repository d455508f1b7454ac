"""Bearer API keys for the REST API, and the room-scope checks every endpoint makes (usable_room and the like)."""

from __future__ import annotations

from typing import NoReturn

from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from delivery.publish import Checked
from dovecote.throttling import API_KEY_FAILURES
from rooms.models import ApiKey, Room, hash_api_key
from subscriptions.models import Subscription


class ApiKeyUser:
    """The principal of a request made with an API key."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, key: ApiKey) -> None:
        self.key = key

    def __str__(self) -> str:
        return str(self.key)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <key>`: a missing or unknown key is 401."""

    def authenticate(self, request: Request) -> tuple[ApiKeyUser, ApiKey] | None:
        """Find the request's key; a view with `keys_from_cache` takes it from the process's cache (`KNOWN`) when there.

        Such a view (the publish endpoints) has every publish verify, in its own transaction, that the
        key is still live and still names the room (delivery.publish.stale_checks), and reads the key
        again when it is not (`fresh_room`). An unknown key is always looked up, and refused as before.
        """
        token = bearer_token(request)
        cached = getattr((request.parser_context or {}).get("view"), "keys_from_cache", False)
        if cached and token and (known := KNOWN.key(token)) is not None:
            known.mark_used()
            return ApiKeyUser(known), known
        found = self._look_up(request)
        if cached and found is not None and token:
            KNOWN.remember_key(token, found[1])
        return found

    def _look_up(self, request: Request) -> tuple[ApiKeyUser, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        key = ApiKey.authenticate(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if key is None:
            self.refuse(request, "unknown or revoked API key" if scheme.lower() == "bearer" and token.strip()
                        else "use the header Authorization: Bearer <api key>")
        key.mark_used()
        return ApiKeyUser(key), key

    @staticmethod
    def refuse(request: Request, reason: str) -> NoReturn:
        """Count a failed key against the caller's address, then answer 429 over the limit, else 401.

        A right key is checked before the limit, so another client's failures from the same address
        (or through the same proxy) never lock it out; a key has 240 random bits, so the limit is
        there to bound the work a stranger causes, not to slow down guessing.
        """
        wait = API_KEY_FAILURES.seconds_blocked(request)
        API_KEY_FAILURES.record_failure(request)
        if wait:
            raise exceptions.Throttled(wait, detail=f"too many failed API keys from this address; retry in {wait} s")
        raise exceptions.AuthenticationFailed(reason)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


def bearer_token(request: Request) -> str:
    """The token of an `Authorization: Bearer <token>` header ("" without one)."""
    scheme, _, token = authentication.get_authorization_header(request).decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class KnownKeysAndRooms:
    """The API keys (with the rooms each names) and the rooms this process has read, for the publish path.

    At most `LIMIT` of each; a full cache starts again empty. Entries are never trusted for a refusal:
    a room the cache says the key may not use, or does not know, is looked up before any 403 or 404.
    """

    LIMIT = 10_000

    def __init__(self) -> None:
        self._keys: dict[str, tuple[ApiKey, frozenset[int]]] = {}
        self._rooms: dict[int, Room] = {}

    def key(self, token: str) -> ApiKey | None:
        known = self._keys.get(hash_api_key(token))
        return None if known is None else known[0]

    def remember_key(self, token: str, key: ApiKey) -> None:
        rooms = frozenset() if key.is_admin else frozenset(key.rooms.values_list("pk", flat=True))
        if len(self._keys) >= self.LIMIT:
            self._keys.clear()
        self._keys[hash_api_key(token)] = (key, rooms)

    def room_for(self, key: ApiKey, token: str, room_id: int) -> Room | None:
        """The cached room, if the cached key may use it (None: look it up)."""
        room = self._rooms.get(room_id)
        known = self._keys.get(hash_api_key(token))
        if room is None or known is None or known[0] is not key:
            return None
        return room if key.is_admin or room_id in known[1] else None

    def read_room(self, key: ApiKey, token: str, room_id: int) -> Room | None:
        """Read and remember a room the cached key may use that this process has not read yet (None: not one).

        Only a room the cached key names (any room, for an admin key) is read. The lane leaves every
        other to the view, which answers 403 or 404, or reads the key's rooms again when it has been
        given this one since. A process just started, or a room just made, thus takes its first
        burst of publishes through the lane rather than one view request per thread.
        """
        known = self._keys.get(hash_api_key(token))
        if known is None or known[0] is not key or not (key.is_admin or room_id in known[1]):
            return None
        room = Room.objects.filter(pk=room_id).first()
        if room is not None:
            self.remember_room(room)
        return room

    def remember_room(self, room: Room) -> None:
        if len(self._rooms) >= self.LIMIT:
            self._rooms.clear()
        self._rooms[room.pk] = room

    def forget(self, token: str, room_id: int) -> None:
        self._keys.pop(hash_api_key(token), None)
        self._rooms.pop(room_id, None)


KNOWN = KnownKeysAndRooms()


def cached_room(request: Request, room_id: int) -> tuple[Room, Checked]:
    """Return room `room_id` for a publish, from the process's cache when it can, with what to verify at commit.

    A room not in the cache (or that the cached key may not use) is read as `usable_room` reads it:
    404 if there is none, 403 if the key may not use it.
    """
    key, token = api_key(request), bearer_token(request)
    room = KNOWN.room_for(key, token, room_id)
    if room is None:
        room = usable_room(request, room_id)
        KNOWN.remember_room(room)
        if not key.is_admin and token:
            KNOWN.remember_key(token, key)  # its rooms again: it may have been given this one since
    return room, checked(key, room)


def checked(key: ApiKey, room: Room) -> Checked:
    """What a publish with this cached key and room must find unchanged when its rows are written."""
    return Checked(key.pk, key.is_admin, room.pk, room.routing_version, room.updated_at)


def fresh_room(request: Request, room_id: int) -> Room:
    """Forget what the cache held for this request's key and room, and read both again (401, 403, 404 as ever)."""
    token = bearer_token(request)
    KNOWN.forget(token, room_id)
    key = ApiKey.authenticate(token)
    if key is None:
        ApiKeyAuthentication.refuse(request, "unknown or revoked API key")
    request.user = ApiKeyUser(key)  # type: ignore[assignment]  # DRF's stubs know only Django's users
    request.auth = key
    return usable_room(request, room_id)


def api_key(request: Request) -> ApiKey:
    return request.auth


def check_room_access(request: Request, room: Room) -> None:
    """Raise 403 unless the request's key may use `room`."""
    if not api_key(request).can_use_room(room.pk):
        raise exceptions.PermissionDenied(f"this API key has no rights on room {room.pk}")


def check_admin(request: Request, action: str) -> None:
    """Raise 403 unless the request's key is an admin key."""
    if not api_key(request).is_admin:
        raise exceptions.PermissionDenied(f"only admin keys may {action}")


def usable_room(request: Request, room_id: int) -> Room:
    """Return room `room_id` if the request's key may use it: 404 if there is none, else 403.

    One query: the room, and whether the key names it (every publish comes this way).
    """
    key = api_key(request)
    rooms = Room.objects.filter(pk=room_id)
    if not key.is_admin:
        rooms = rooms.annotate(key_may_use=Exists(ApiKey.rooms.through.objects.filter(
            apikey_id=key.pk, room_id=OuterRef("pk"))))
    room = get_object_or_404(rooms)
    if key.is_revoked or not (key.is_admin or room.key_may_use):
        raise exceptions.PermissionDenied(f"this API key has no rights on room {room.pk}")
    return room


def usable_subscription(request: Request, subscription_id: int, kind: str | None = None) -> Subscription:
    """Return the subscription if the request's key may use its room: 404 if there is none, else 403.

    With `kind` (push or pull), a subscription of the other kind is a 400.
    """
    subscription = get_object_or_404(Subscription.objects.select_related("room"), pk=subscription_id)
    check_room_access(request, subscription.room)
    if kind and subscription.type != kind:
        wrong_kind = f"subscription {subscription.pk} is a {subscription.type} subscription, not {kind}"
        raise exceptions.ValidationError({"subscription": [wrong_kind]})
    return subscription


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Describe API-key auth in the OpenAPI schema (drf-spectacular finds this by subclassing)."""

    target_class = "api.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer <api key>`"}
