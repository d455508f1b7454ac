"""Signing secrets are encrypted at rest under DOVECOTE_SECRETS_KEY, rotatable, and never shown in the admin."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings

from dovecote import encryption
from subscriptions.models import Subscription
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db


def stored(subscription: Subscription) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT signing_secret FROM subscriptions_subscription WHERE id = %s", [subscription.pk])
        return cursor.fetchone()[0]


def store_raw(subscription: Subscription, value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE subscriptions_subscription SET signing_secret = %s WHERE id = %s",
                       [value, subscription.pk])


def test_the_database_holds_ciphertext_and_the_model_the_secret() -> None:
    subscription = make_subscription(make_room())
    secret = subscription.signing_secret
    assert secret.startswith("whsec_")
    raw = stored(subscription)
    assert raw.startswith("fernet:") and secret not in raw and secret.removeprefix("whsec_") not in raw
    assert Subscription.objects.get(pk=subscription.pk).signing_secret == secret
    assert subscription.rotate_signing_secret() != secret
    assert Subscription.objects.get(pk=subscription.pk).signing_secret == subscription.signing_secret


def test_a_plaintext_row_from_before_is_read_and_then_encrypted() -> None:
    subscription = make_subscription(make_room())
    store_raw(subscription, "whsec_" + "A" * 43 + "=")
    assert Subscription.objects.get(pk=subscription.pk).signing_secret == "whsec_" + "A" * 43 + "="
    call_command("reencrypt_secrets", verbosity=0)
    assert stored(subscription).startswith("fernet:")
    assert Subscription.objects.get(pk=subscription.pk).signing_secret == "whsec_" + "A" * 43 + "="


def test_a_key_is_rotated_by_putting_a_new_one_first_then_reencrypting(settings) -> None:
    subscription = make_subscription(make_room())
    secret, old = subscription.signing_secret, settings.DOVECOTE_SECRETS_KEYS[0]
    new = Fernet.generate_key().decode()
    with override_settings(DOVECOTE_SECRETS_KEYS=[new, old]):
        assert Subscription.objects.get(pk=subscription.pk).signing_secret == secret  # old rows still read
        call_command("reencrypt_secrets", verbosity=0)
    with override_settings(DOVECOTE_SECRETS_KEYS=[new]):  # the old key is gone
        assert Subscription.objects.get(pk=subscription.pk).signing_secret == secret
    with override_settings(DOVECOTE_SECRETS_KEYS=[old]), pytest.raises(encryption.SecretUnreadable):
        Subscription.objects.get(pk=subscription.pk)


def test_the_admin_never_shows_a_signing_secret_in_full(client: Client, owner) -> None:
    subscription = make_subscription(make_room())
    client.force_login(owner)
    page = client.get(f"/admin/subscriptions/subscription/{subscription.pk}/change/").content.decode()
    assert subscription.signing_secret not in page and stored(subscription) not in page
    assert subscription.signing_secret[:10] + "…" in page
    listing = client.get("/admin/subscriptions/subscription/").content.decode()
    assert subscription.signing_secret not in listing


def test_the_migration_encrypts_plaintext_rows_and_going_back_decrypts_them() -> None:
    from importlib import import_module

    from django.apps import apps

    migration = import_module("subscriptions.migrations.0002_encrypt_signing_secrets")
    subscription = make_subscription(make_room())
    plaintext = subscription.signing_secret
    store_raw(subscription, plaintext)
    migration.encrypt_plaintext_rows(apps, connection.schema_editor())
    assert stored(subscription).startswith("fernet:")
    migration.decrypt_rows(apps, connection.schema_editor())
    assert stored(subscription) == plaintext
