from __future__ import annotations

from django.contrib import admin

from subscriptions.models import Subscription


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ["name", "room", "type", "status", "push_url", "max_in_flight", "last_error_at"]
    list_filter = ["type", "status", "room"]
    search_fields = ["name", "push_url"]
    # The signing secret is never shown in full here (only on create and rotation, in the UI or the API).
    exclude = ["signing_secret", "session_token"]
    readonly_fields = ["signing_secret_shown", "last_error", "last_error_at", "created_at", "updated_at"]

    @admin.display(description="signing secret")
    def signing_secret_shown(self, subscription: Subscription) -> str:
        return subscription.masked_secret() or "—"
