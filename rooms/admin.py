from __future__ import annotations

from django.contrib import admin

from rooms.models import ApiKey, EventType, Room


class EventTypeInline(admin.TabularInline):
    model = EventType
    extra = 0


@admin.register(Room)
class RoomAdmin(admin.ModelAdmin):
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
class EventTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "room", "created_at"]
    list_filter = ["room"]
    search_fields = ["name"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "is_admin", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["is_admin"]
    # Keys are issued by `create_api_key` (or the UI), which shows the plaintext once.
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    filter_horizontal = ["rooms"]

    def has_add_permission(self, request) -> bool:  # noqa: ANN001
        return False
