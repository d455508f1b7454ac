"""Print a new key for DOVECOTE_SECRETS_KEY (a Fernet key)."""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Print a new Fernet key for DOVECOTE_SECRETS_KEY (see docs/security.md for rotation)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(Fernet.generate_key().decode())
