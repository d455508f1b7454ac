"""Encrypt every signing secret with the current (first) key of DOVECOTE_SECRETS_KEY."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection

from dovecote.encryption import decrypt, encrypt, is_encrypted_with_current_key

BATCH = 500


class Command(BaseCommand):
    help = ("Re-encrypt every subscription's signing secret with the first key of DOVECOTE_SECRETS_KEY "
            "(run after putting a new key first; then the old key can be removed).")

    def handle(self, *args: Any, **options: Any) -> None:
        changed = total = 0
        last = 0
        while True:
            with connection.cursor() as cursor:
                cursor.execute("SELECT id, signing_secret FROM subscriptions_subscription WHERE id > %s "
                               "ORDER BY id LIMIT %s", [last, BATCH])
                rows = cursor.fetchall()
                for pk, stored in rows:
                    if not is_encrypted_with_current_key(stored):
                        cursor.execute("UPDATE subscriptions_subscription SET signing_secret = %s "
                                       "WHERE id = %s AND signing_secret = %s", [encrypt(decrypt(stored)), pk, stored])
                        changed += cursor.rowcount
            if not rows:
                break
            total += len(rows)
            last = rows[-1][0]
        self.stdout.write(f"{changed} of {total} signing secrets re-encrypted with the current key")
