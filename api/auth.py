"""Bearer API keys for the REST API, and the room-scope checks every endpoint makes (usable_room and the like)."""

from __future__ import annotations

from typing import NoReturn

from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from dovecote.throttling import API_KEY_FAILURES
from rooms.models import ApiKey, Room
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
