from __future__ import annotations

from django.contrib import admin

from delivery.models import Delivery, DeliveryAttempt, Message, PublishedMessage

INLINE_FIELDS = ("subscription", "destination", "status", "attempts", "next_attempt_at", "last_error")


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    fields = INLINE_FIELDS
    readonly_fields = INLINE_FIELDS
    can_delete = False


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["id", "room", "event_type", "event_version", "correlation_id", "created_at"]
    list_filter = ["room"]
    search_fields = ["=id", "=correlation_id", "=idempotency_key"]
    date_hierarchy = "created_at"
    inlines = [DeliveryInline]


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    readonly_fields = ["attempt", "started_at", "duration_ms", "outcome", "status_code", "error", "next_delay_ms"]
    can_delete = False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["message", "destination", "status", "attempts", "next_attempt_at", "updated_at"]
    list_filter = ["status"]
    search_fields = ["=message__id", "=message__correlation_id", "destination"]
    list_select_related = ["message"]
    raw_id_fields = ["message", "subscription"]
    inlines = [AttemptInline]


@admin.register(PublishedMessage)
class PublishedMessageAdmin(admin.ModelAdmin):
    list_display = ["delivery", "kind", "destination", "attempt", "delay_ms", "sent_at"]
    list_filter = ["kind"]
    raw_id_fields = ["delivery"]


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(admin.ModelAdmin):
    list_display = ["delivery", "attempt", "outcome", "status_code", "duration_ms", "started_at"]
    list_filter = ["outcome"]
    raw_id_fields = ["delivery"]
