"""Dovecote's URLs plus a push receiver made with the receiver kit's Django integration (its tests use them)."""

from __future__ import annotations

from django.urls import path

from dovecote.urls import handler404  # noqa: F401
from dovecote.urls import urlpatterns as dovecote_urlpatterns
from dovecote_receiver import Push
from dovecote_receiver.django import push_receiver
from rooms.models import Room

# The tests set the receiver's secrets (setting TEST_PUSH_SECRETS), and may make the handler fail.
CRASHES: list[int] = []  # attempts on which the handler fails after doing its work


@push_receiver(secrets_setting="TEST_PUSH_SECRETS")
def orders(push: Push) -> None:
    """The receiver's own work: a row in its database (a room stands in for an order)."""
    Room.objects.create(name=f"order-{push.data['order_id']}")
    if push.attempt in CRASHES:
        raise RuntimeError("crashed between receiving and handling")


urlpatterns = [path("hooks/orders/", orders), *dovecote_urlpatterns]
