from __future__ import annotations

from django.apps import AppConfig


class SubscriptionsConfig(AppConfig):
    name = "subscriptions"
