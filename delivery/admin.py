"""Messages, deliveries and their attempts in the Django admin: shown, never changed (dovecote/admin.py).

Their states move only by the delivery workflows (replay, purge, release: the console and the API).
"""

from __future__ import annotations

from django.contrib import admin

from delivery.models import Delivery, DeliveryAttempt, Message, SendRecord
from dovecote.admin import InspectOnlyAdmin, InspectOnlyInline

INLINE_FIELDS = ("subscription", "destination", "status", "attempts", "next_attempt_at", "last_error")


class DeliveryInline(InspectOnlyInline):
    model = Delivery
    fields = INLINE_FIELDS


@admin.register(Message)
class MessageAdmin(InspectOnlyAdmin):
    list_display = ["id", "room", "event_type", "event_version", "correlation_id", "created_at"]
    list_filter = ["room"]
    search_fields = ["=id", "=correlation_id", "=idempotency_key"]
    date_hierarchy = "created_at"
    inlines = [DeliveryInline]


class AttemptInline(InspectOnlyInline):
    model = DeliveryAttempt
    fields = ["attempt", "started_at", "duration_ms", "outcome", "status_code", "error", "next_delay_ms"]


@admin.register(Delivery)
class DeliveryAdmin(InspectOnlyAdmin):
    list_display = ["message", "destination", "status", "attempts", "next_attempt_at", "updated_at"]
    list_filter = ["status"]
    search_fields = ["=message__id", "=message__correlation_id", "destination"]
    list_select_related = ["message"]
    raw_id_fields = ["message", "subscription"]
    # A pull lease's token: ack ids carry it.
    secret_fields = ("lease_token",)
    inlines = [AttemptInline]


@admin.register(SendRecord)
class SendRecordAdmin(InspectOnlyAdmin):
    list_display = ["delivery", "kind", "destination", "attempt", "delay_ms", "sent_at"]
    list_filter = ["kind"]
    raw_id_fields = ["delivery"]


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(InspectOnlyAdmin):
    list_display = ["delivery", "attempt", "outcome", "status_code", "duration_ms", "started_at"]
    list_filter = ["outcome"]
    raw_id_fields = ["delivery"]
