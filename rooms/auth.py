"""Bearer API keys for the REST API, and the room-scope check every room endpoint makes."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from rooms.models import ApiKey, Room


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
        if scheme.lower() != "bearer" or not token.strip():
            raise exceptions.AuthenticationFailed("use the header Authorization: Bearer <api key>")
        key = ApiKey.authenticate(token.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("unknown or revoked API key")
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
        return ApiKeyUser(key), key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


def api_key(request: Request) -> ApiKey:
    return request.auth


def check_room_access(request: Request, room: Room) -> None:
    """Raise 403 unless the request's key may use `room`."""
    if not api_key(request).can_use_room(room.pk):
        raise exceptions.PermissionDenied(f"this API key has no rights on room {room.pk}")
