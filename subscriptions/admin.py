"""Subscriptions in the Django admin: shown, never changed (dovecote/admin.py).

Their push URLs, filters and settings change through the API or the console, which check them
(subscriptions/rules.py); neither the signing secret nor the previous one is ever shown here.
"""

from __future__ import annotations

from django.contrib import admin

from dovecote.admin import InspectOnlyAdmin
from subscriptions.models import Subscription


@admin.register(Subscription)
class SubscriptionAdmin(InspectOnlyAdmin):
    list_display = ["name", "room", "type", "status", "push_url", "max_in_flight", "last_error_at"]
    list_filter = ["type", "status", "room"]
    search_fields = ["name", "push_url"]
    # The signing secrets (current and previous) are left out as encrypted fields.
    readonly_fields = ["signing_secret_shown"]

    @admin.display(description="signing secret")
    def signing_secret_shown(self, subscription: Subscription) -> str:
        return subscription.masked_secret() or "—"
