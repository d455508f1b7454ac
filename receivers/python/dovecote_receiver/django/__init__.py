"""Django integration: add "dovecote_receiver.django" to INSTALLED_APPS, migrate, and route a view.

    from dovecote_receiver.django import push_receiver

    @push_receiver(secrets_setting="DOVECOTE_WEBHOOK_SECRETS")
    def orders(push):
        Order.objects.create(id=push.data["order_id"])   # in the same transaction as the inbox row

    urlpatterns = [path("hooks/orders/", orders)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dovecote_receiver.django.views import push_receiver


def __getattr__(name: str) -> Any:
    # Importing the views needs configured settings; the app registry imports this package before.
    if name == "push_receiver":
        from dovecote_receiver.django.views import push_receiver  # noqa: PLC0415 - needs configured settings

        return push_receiver
    raise AttributeError(name)


__all__ = ["push_receiver"]
