from __future__ import annotations

from django.contrib import admin

from subscriptions.models import Subscription


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ["name", "room", "type", "status", "push_url", "max_in_flight", "last_error_at"]
    list_filter = ["type", "status", "room"]
    search_fields = ["name", "push_url"]
    readonly_fields = ["signing_secret", "last_error", "last_error_at", "created_at", "updated_at"]
