"""Rooms, event types and API keys in the Django admin: shown, never changed (dovecote/admin.py).

A key's scope (admin or its rooms) is fixed when it is minted; revoking is the one change the
admin makes, as an action of its own that needs `rooms.change_apikey`.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from dovecote.admin import InspectOnlyAdmin, InspectOnlyInline
from rooms.models import ApiKey, EventType, Room

REVOKE_PERMISSION = "rooms.change_apikey"


class EventTypeInline(InspectOnlyInline):
    model = EventType


@admin.register(Room)
class RoomAdmin(InspectOnlyAdmin):
    list_display = [
        "name",
        "id",
        "message_expiration_ms",
        "delivery_delay_ms",
        "delivery_delay_multiplier",
        "delivery_attempts",
        "max_delivery_delay_ms",
    ]
    search_fields = ["name"]
    inlines = [EventTypeInline]


@admin.register(EventType)
class EventTypeAdmin(InspectOnlyAdmin):
    list_display = ["name", "version", "room", "created_at"]
    list_filter = ["room"]
    search_fields = ["name"]


@admin.register(ApiKey)
class ApiKeyAdmin(InspectOnlyAdmin):
    list_display = ["name", "prefix", "is_admin", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["is_admin"]
    # Keys are minted by `create_api_key` (or the console), which shows the plaintext once.
    secret_fields = ("key_hash",)
    actions = ["revoke"]

    @admin.action(description="Revoke the selected API keys", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        """Stop the selected keys from authenticating (those revoked already stay as they are), each logged."""
        live = list(queryset.filter(revoked_at__isnull=True))
        for key in live:
            key.revoke()
            self.log_change(request, key, "Revoked.")
        self.message_user(request, f"{len(live)} API key{'' if len(live) == 1 else 's'} revoked.")

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REVOKE_PERMISSION)
