"""No page of the Django admin shows a secret: a signing secret (the previous one too), a key's hash, a token.

A signing secret is shown in full once, where it is made; the admin shows at most its first ten
characters (`whsec_` and 4), as the console and the API do.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from delivery.models import Delivery
from rooms.models import ApiKey
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db


def raw(table: str, column: str, pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def admin_pages(client: Client) -> dict[str, str]:
    """Every admin page a secret could reach: each model's list, and each row's page."""
    from django.contrib import admin

    pages = {}
    for model in admin.site._registry:
        meta = model._meta
        listing = f"/admin/{meta.app_label}/{meta.model_name}/"
        pages[listing] = client.get(listing).content.decode()
        for pk in model.objects.values_list("pk", flat=True):
            pages[f"{listing}{pk}/change/"] = client.get(f"{listing}{pk}/change/").content.decode()
    return pages


def test_no_admin_page_shows_a_signing_secret_a_key_hash_or_a_token(client: Client, owner: User) -> None:
    room = make_room()
    subscription = make_subscription(room, name="billing")
    previous = subscription.signing_secret
    subscription.rotate_signing_secret()  # the previous secret keeps signing during the overlap
    key, plaintext = ApiKey.issue("shop", rooms=[room])
    delivery = make_delivery(make_message(room), subscription, status=Delivery.Status.LEASED,
                             lease_token="lease-token-abcdef-123456")
    secrets = {
        "the signing secret": subscription.signing_secret,
        "the previous signing secret": previous,
        "the stored signing secret": raw("subscriptions_subscription", "signing_secret", subscription.pk),
        "the stored previous secret": raw("subscriptions_subscription", "previous_signing_secret", subscription.pk),
        "the API key": plaintext, "the API key's hash": key.key_hash,
        "the lease token": delivery.lease_token,
    }
    for name, secret in list(secrets.items()):
        if secret.startswith("whsec_"):
            secrets[f"{name} without its prefix"] = secret.removeprefix("whsec_")
    client.force_login(owner)

    pages = admin_pages(client)

    assert f"/admin/subscriptions/subscription/{subscription.pk}/change/" in pages
    shown = [(name, path) for path, html in pages.items() for name, secret in secrets.items() if secret in html]
    assert shown == []
    page = pages[f"/admin/subscriptions/subscription/{subscription.pk}/change/"]
    assert subscription.signing_secret[:10] + "…" in page and previous[:10] not in page
