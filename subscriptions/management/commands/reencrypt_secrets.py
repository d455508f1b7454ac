"""Encrypt every signing secret (and every previous one still kept) with the current key of DOVECOTE_SECRETS_KEY."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection

from dovecote.encryption import decrypt, encrypt, is_encrypted_with_current_key

BATCH = 500
COLUMNS = ("signing_secret", "previous_signing_secret")


class Command(BaseCommand):
    help = ("Re-encrypt every subscription's signing secret with the first key of DOVECOTE_SECRETS_KEY "
            "(run after putting a new key first; then the old key can be removed).")

    def handle(self, *args: Any, **options: Any) -> None:
        changed = total = 0
        for column in COLUMNS:
            column_changed, column_total = reencrypt(column)
            changed += column_changed
            total += column_total
        self.stdout.write(f"{changed} of {total} signing secrets re-encrypted with the current key")


def reencrypt(column: str) -> tuple[int, int]:
    """Re-encrypt the non-empty values of one secret column; return (changed, seen)."""
    changed = total = last = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id, {column} FROM subscriptions_subscription WHERE id > %s AND {column} <> '' "
                           "ORDER BY id LIMIT %s", [last, BATCH])
            rows = cursor.fetchall()
            for pk, stored in rows:
                if not is_encrypted_with_current_key(stored):
                    cursor.execute(f"UPDATE subscriptions_subscription SET {column} = %s "
                                   f"WHERE id = %s AND {column} = %s", [encrypt(decrypt(stored)), pk, stored])
                    changed += cursor.rowcount
        if not rows:
            return changed, total
        total += len(rows)
        last = rows[-1][0]
