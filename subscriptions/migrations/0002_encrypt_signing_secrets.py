# The signing secret column holds `fernet:<token>` (dovecote/encryption.py): widened to text, then
# every plaintext row is encrypted with the first key of DOVECOTE_SECRETS_KEY. Going back writes
# the plaintext again.

import dovecote.encryption
import subscriptions.models
from django.db import migrations

BATCH = 500


def encrypt_plaintext_rows(apps, schema_editor):
    Subscription = apps.get_model("subscriptions", "Subscription")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id, signing_secret FROM subscriptions_subscription")
        rows = [(pk, secret) for pk, secret in cursor.fetchall() if not secret.startswith(dovecote.encryption.PREFIX)]
    for start in range(0, len(rows), BATCH):
        for pk, secret in rows[start:start + BATCH]:
            # The field encrypts on the way to the database.
            Subscription.objects.filter(pk=pk).update(signing_secret=secret)


def decrypt_rows(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id, signing_secret FROM subscriptions_subscription")
        for pk, stored in cursor.fetchall():
            cursor.execute("UPDATE subscriptions_subscription SET signing_secret = %s WHERE id = %s",
                           [dovecote.encryption.decrypt(stored), pk])


class Migration(migrations.Migration):

    dependencies = [
        ("subscriptions", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="subscription",
            name="signing_secret",
            field=dovecote.encryption.EncryptedTextField(default=subscriptions.models.new_signing_secret),
        ),
        migrations.RunPython(encrypt_plaintext_rows, decrypt_rows),
    ]
